package a2a

// idleQueue holds tasks that do not run, oldest first: a binary heap by
// the order in which the tasks were made (taskRec.seq), so that the
// oldest is found, and any task taken out, without a look at the others.
// A task is in two queues at most, its owner's and all owners'; at names
// the place in taskRec.at that records where the task sits in this one.
type idleQueue struct {
	tasks []*taskRec
	at    int
}

// oldest returns the oldest task of the queue, or nil.
func (q *idleQueue) oldest() *taskRec {
	if len(q.tasks) == 0 {
		return nil
	}
	return q.tasks[0]
}

func (q *idleQueue) push(t *taskRec) {
	q.tasks = append(q.tasks, t)
	q.up(len(q.tasks) - 1)
}

// remove takes t out of the queue, which holds it.
func (q *idleQueue) remove(t *taskRec) {
	i, last := t.at[q.at], len(q.tasks)-1
	if i != last {
		q.swap(i, last)
	}
	q.tasks[last] = nil
	q.tasks = q.tasks[:last]
	t.at[q.at] = -1
	if i != last {
		q.down(i)
		q.up(i)
	}
}

func (q *idleQueue) swap(i, j int) {
	q.tasks[i], q.tasks[j] = q.tasks[j], q.tasks[i]
	q.tasks[i].at[q.at], q.tasks[j].at[q.at] = i, j
}

func (q *idleQueue) up(i int) {
	q.tasks[i].at[q.at] = i
	for i > 0 {
		p := (i - 1) / 2
		if q.tasks[p].seq <= q.tasks[i].seq {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q *idleQueue) down(i int) {
	n := len(q.tasks)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && q.tasks[r].seq < q.tasks[c].seq {
			c = r
		}
		if q.tasks[i].seq <= q.tasks[c].seq {
			return
		}
		q.swap(i, c)
		i = c
	}
}
