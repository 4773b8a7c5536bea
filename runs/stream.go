package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"
)

// Stream yields a run's recorded events after the one numbered after (0
// for all), waiting for new ones until the run's last event (KindRunEnd),
// and then ends. A client that reconnects passes the Seq of the last event
// it saw and misses nothing. The run may execute on any worker; the events
// come from the database, so any Manager on it streams any run (those a
// worker of this process has just recorded are read from its memory, with
// no query).
//
// Events are kept for the event retention after the run ends (see
// WithEventRetention); a stream of a run whose events are gone ends at
// once.
func (m *Manager) Stream(ctx context.Context, id string, after int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if _, err := m.Get(ctx, id); err != nil {
			yield(Event{}, err)
			return
		}
		m.follow(ctx)
		var err error
		wake, stop := m.hub.subscribe(id, eventsOf(id))
		defer stop()
		for {
			// The events this process's recorder committed come from
			// memory; the others, and the run's end, from the database.
			var evs []Event
			datas, live := m.hub.recent(id, after, 256)
			if live {
				evs, err = decodeEvents(id, datas)
			} else {
				evs, err = m.events(ctx, id, after, 256)
			}
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range evs {
				after = ev.Seq
				if !yield(ev, nil) || ev.Kind == KindRunEnd {
					return
				}
			}
			if len(evs) == 256 || live && len(evs) > 0 {
				continue
			}
			if !live {
				r, err := m.Get(ctx, id)
				if err != nil {
					yield(Event{}, err)
					return
				}
				if r.Status.Final() {
					// Its last event was recorded with its end: read once more.
					evs, err := m.events(ctx, id, after, MaxLimit)
					if err != nil {
						yield(Event{}, err)
						return
					}
					for _, ev := range evs {
						if !yield(ev, nil) {
							return
						}
					}
					return
				}
			}
			if err := m.sleep(ctx, wake); err != nil {
				yield(Event{}, err)
				return
			}
		}
	}
}

// decodeEvents decodes the events of run stored as datas.
func decodeEvents(run string, datas [][]byte) ([]Event, error) {
	out := make([]Event, 0, len(datas))
	for _, data := range datas {
		var ev Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("runs: events of run %s: a stored event does not decode: %w", quoteCut(run), err)
		}
		out = append(out, ev)
	}
	return out, nil
}

// events reads up to limit events of run after seq.
func (m *Manager) events(ctx context.Context, run string, after int64, limit int) ([]Event, error) {
	rows, err := m.query(ctx, nil, `SELECT data FROM {events} WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, run, after, limit)
	if err != nil {
		return nil, fmt.Errorf("runs: events of run %s: %w", quoteCut(run), err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("runs: events of run %s: %w", quoteCut(run), err)
		}
		var ev Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("runs: events of run %s: a stored event does not decode: %w", quoteCut(run), err)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// recorder writes the events of one attempt at a run, in batches: a batch
// is what arrives within a millisecond of its first event, or while the
// previous batch was being written, so a busy run writes few large batches
// and a quiet one writes a step's events at once. The attempt's first
// event is written at once, alone, when a stream may wait for it: streams
// waiting for the run's start see it without the wait. On a LocalQueue's
// database, the events of a run that nobody follows wait longer, and
// those of a quick run are written with its end.
// Its writes are fenced like checkpoints: events of a worker that lost the
// run's lease are dropped.
type recorder struct {
	m       *Manager
	run     string
	epoch   int64
	attempt int
	seq     int64 // the last number given out
	// ch carries pointers: a buffer of recorderQueue events by value
	// (some 330 bytes each) was a third of a megabyte to allocate and
	// clear for every run.
	ch     chan *Event
	done   chan struct{}
	fenced bool
	// keepLast: the batch the recorder holds when it is closed is not
	// written but left in rest, for the run's end to write in its own
	// transaction (SQLite, where that saves one of a run's few
	// transactions and a statement costs no round trip), unless a stream
	// of this process follows the run: it reads the batch from the hub's
	// live log once written, instead of from the database.
	keepLast bool
	rest     []*Event
}

const recorderBatch = 512

// recorderQueue is how many events a run may get ahead of its recorder
// before add waits.
const recorderQueue = 1024

// recorderWindow is how long a recorder waits, after an event, for more to
// write with it.
const recorderWindow = time.Millisecond

// recorderQuietWindow is recorderWindow for a run that nobody follows, on
// a database no other process reads (see recorder.loop).
const recorderQuietWindow = 50 * time.Millisecond

func (m *Manager) newRecorder(run string, epoch int64, attempt int, seq int64) *recorder {
	rec := &recorder{m: m, run: run, epoch: epoch, attempt: attempt, seq: seq, ch: make(chan *Event, recorderQueue), done: make(chan struct{}),
		keepLast: m.b.Dialect == DialectSQLite}
	m.hub.openLog(run, seq+1)
	go rec.loop()
	return rec
}

// add numbers ev and queues it. It is called from one goroutine.
func (rec *recorder) add(ev Event) {
	rec.seq++
	ev.Seq, ev.Run, ev.Attempt = rec.seq, rec.run, rec.attempt
	rec.ch <- &ev
}

// close stops the recorder once it has written what is queued, except
// the last batch when it keeps it (keepLast): that batch is returned, and
// the caller writes it, fenced, or drops it with the attempt.
func (rec *recorder) close() []*Event {
	close(rec.ch)
	<-rec.done
	rec.m.hub.closeLog(rec.run)
	return rec.rest
}

func (rec *recorder) loop() {
	defer close(rec.done)
	batch := make([]*Event, 0, 16)
	window := time.NewTimer(time.Hour)
	window.Stop()
	// On a LocalQueue's database, which no other process reads, a run
	// that no stream of this process follows keeps its events for longer
	// (recorderQuietWindow), so that a run of quick steps writes them with
	// its end, in one transaction; a stream that begins to follow it
	// pokes the recorder, which writes what it holds at once.
	var poke <-chan struct{}
	if rec.m.b.Local != nil {
		var stop func()
		poke, stop = rec.m.hub.subscribe(followOf(rec.run))
		defer stop()
	}
	started := false
	for first := range rec.ch {
		batch = append(batch[:0], first)
		// The events of one step come microseconds apart (a node's end,
		// its update, the state after the step): wait a moment for them,
		// so that a step's events cost one commit, not one each.
		quiet := poke != nil && !rec.m.hub.followed(eventsOf(rec.run))
		if quiet {
			window.Reset(recorderQuietWindow)
		} else {
			window.Reset(recorderWindow)
		}
		// The attempt's first event goes out alone, at once, when a
		// stream may be waiting for it: always on a database that other
		// processes share, and on a LocalQueue's when a stream of this
		// Manager follows the run. Otherwise (a run that nobody streams,
		// as a run waited for) it waits for the rest of its step, or of
		// the run (quiet), and a run of a few quick steps is written in
		// one transaction.
		alone := !started && (rec.m.b.Local == nil || rec.m.hub.followed(eventsOf(rec.run)))
		last := false
	fill:
		for !alone && len(batch) < recorderBatch {
			select {
			case ev, ok := <-rec.ch:
				if !ok {
					last = true
					break fill
				}
				batch = append(batch, ev)
			case <-window.C:
				break fill
			case <-poke:
				if quiet {
					break fill
				}
			}
		}
		window.Stop()
		started = true
		if rec.fenced {
			continue
		}
		if last && rec.keepLast && !rec.m.hub.followed(eventsOf(rec.run)) {
			rec.rest = batch
			continue
		}
		if err := rec.write(batch); err != nil {
			if errors.Is(err, ErrLeaseLost) {
				rec.fenced = true
				continue
			}
			rec.m.log.Warn("runs: recording events failed", "run", rec.run, "events", len(batch), "error", err)
		}
	}
}

func (rec *recorder) write(batch []*Event) error {
	ctx := context.Background()
	seqs := make([]int64, len(batch))
	datas := make([][]byte, len(batch))
	for i := range batch {
		seqs[i] = batch[i].Seq
		datas[i], _ = json.Marshal(batch[i])
	}
	m := rec.m
	if m.b.Dialect == DialectPostgres {
		// One statement: the fence, the rows and the notification.
		var n int64
		err := m.queryRow(ctx, nil, `WITH ok AS (
				SELECT 1 FROM {runs} WHERE run_id = $1 AND epoch = $2 AND status = 'running'
			), ins AS (
				INSERT INTO {events} (run_id, seq, data)
				SELECT $1, x.s, x.d FROM unnest($3::bigint[], $4::bytea[]) AS x(s, d) WHERE EXISTS (SELECT 1 FROM ok)
				ON CONFLICT DO NOTHING RETURNING 1
			)
			SELECT (SELECT count(*) FROM ok), (SELECT count(*) FROM (SELECT pg_notify($5, $6) FROM ok) n)`,
			rec.run, rec.epoch, seqs, datas, m.t.channel(), "e:"+rec.run).Scan(&n, new(int64))
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrLeaseLost
		}
		m.hub.record(rec.run, seqs, datas)
		return nil
	}
	err := m.tx(ctx, func(tx *sql.Tx) error {
		var one int
		err := m.queryRow(ctx, tx, `SELECT 1 FROM {runs} WHERE run_id = $1 AND epoch = $2 AND status = 'running'`, rec.run, rec.epoch).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		return insertEvents(ctx, tx, m, rec.run, seqs, datas)
	})
	if err == nil {
		m.hub.record(rec.run, seqs, datas)
	}
	return err
}

// insertEvents inserts events in tx, up to maxEventRows a statement (a
// statement a row was a tenth of a run's CPU time on runs/memory: the
// database/sql and driver work of each statement, not the insert).
func insertEvents(ctx context.Context, tx *sql.Tx, m *Manager, run string, seqs []int64, datas [][]byte) error {
	args := make([]any, 0, 1+2*min(len(seqs), maxEventRows))
	for len(seqs) > 0 {
		n := min(len(seqs), maxEventRows)
		stmt, err := m.prepared(ctx, tx, eventInserts[n])
		if err != nil {
			return err
		}
		args = append(args[:0], run)
		for i := range n {
			args = append(args, seqs[i], datas[i])
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
		seqs, datas = seqs[n:], datas[n:]
	}
	return nil
}

// maxEventRows bounds the rows of one of insertEvents' statements.
const maxEventRows = 16

// eventInserts holds, at n, the statement that inserts n events of a run.
var eventInserts = func() (qs [maxEventRows + 1]string) {
	for n := 1; n <= maxEventRows; n++ {
		var b strings.Builder
		b.WriteString(`INSERT INTO {events} (run_id, seq, data) VALUES `)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "($1, $%d, $%d)", 2+2*i, 3+2*i)
		}
		b.WriteString(` ON CONFLICT DO NOTHING`)
		qs[n] = b.String()
	}
	return qs
}()
