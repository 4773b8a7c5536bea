package bgtask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/outbuf"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

var (
	errTooMany = errors.New("too many")
	errUnknown = errors.New("unknown")
	errClosed  = errors.New("closed")
)

// fakeRunner starts commands that write their name and end when their
// task's context does, or at once for "quick".
type fakeRunner struct{}

type fakeProc struct {
	started time.Time
	task    context.Context
	quick   bool
}

func (fakeRunner) Start(_, task context.Context, command string, _ time.Duration, out *outbuf.TaskOutput) (Proc, tool.Result, error) {
	if command == "missing" {
		return nil, ErrorResult(tool.CodeToolError, errors.New("no such program"), nil, "The command could not be started."), nil
	}
	_, _ = out.Write([]byte(command + " started\n"))
	return &fakeProc{started: time.Now(), task: task, quick: command == "quick"}, tool.Result{}, nil
}

func (p *fakeProc) Started() time.Time { return p.started }

func (p *fakeProc) Wait() Outcome {
	if p.quick {
		return Outcome{State: Exited, Code: 0, Status: "exited with code 0"}
	}
	<-p.task.Done()
	cause := context.Cause(p.task)
	return Outcome{State: Killed, Code: -1, Cause: cause, Status: "killed", Note: "note after the output"}
}

func newManager(maxTasks int) (*Manager[Info], context.CancelCauseFunc) {
	base, cancel := context.WithCancelCause(context.Background())
	return New[Info](fakeRunner{}, Config[Info]{
		Base: base, Limits: Limits{MaxTasks: maxTasks, MaxOutput: 100, Timeout: time.Second, MaxTimeout: 5 * time.Second},
		ErrTooManyTasks: errTooMany, ErrUnknownTask: errUnknown,
		Closed: func() tool.Result { return ErrorResult(tool.CodeToolError, errClosed, nil, "closed") },
		Report: func(i Info) Info { return i },
		Ends:   "killed",
		StopLead: func(id string, o Outcome) string {
			return fmt.Sprintf("Stopped %s (%v).", id, errors.Is(o.Cause, ErrStopped))
		},
	}), cancel
}

func invoke(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	return tool.Invoke(context.Background(), tl, model.ToolCall{ID: "c", Name: tool.Name(tl), Arguments: json.RawMessage(args)})
}

func TestManagerRunsTasksThroughTheirLives(t *testing.T) {
	m, cancel := newManager(1)
	output, err := m.OutputTool()
	require.NoError(t, err)
	stop, err := m.StopTool()
	require.NoError(t, err)

	r, err := m.Start(context.Background(), "serve", "a server", 10_000)
	require.NoError(t, err)
	assert.Contains(t, r.Text(), "Started task-1 in the background.")
	assert.Contains(t, r.Text(), "It is killed if it runs longer than 5s. (timeout_ms 10000 was lowered to the maximum.)")
	assert.Equal(t, "task-1", r.Details.(Info).ID)
	assert.Equal(t, 1, m.Running())

	r, err = m.Start(context.Background(), "another", "", 0)
	require.NoError(t, err)
	assert.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, errTooMany)
	assert.Contains(t, r.Text(), "Running: task-1 (running for")

	r = invoke(t, output, `{"task_id":"1"}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "Output:\nserve started")

	r = invoke(t, stop, `{"task_id":"task-1"}`)
	require.False(t, r.IsError, r.Text())
	assert.True(t, strings.HasPrefix(r.Text(), "Stopped task-1 (true).\ntask-1 (serve): killed.\n(no new output since the previous read)\nnote after the output\nThe task has finished"), r.Text())
	assert.Zero(t, m.Running())

	r = invoke(t, output, `{"task_id":"task-1"}`)
	assert.ErrorIs(t, r.Err, errUnknown)
	assert.Contains(t, r.Text(), `Task "task-1" has finished and is no longer kept`)

	r, err = m.Start(context.Background(), "missing", "", 0)
	require.NoError(t, err)
	assert.Equal(t, "The command could not be started.", r.Text())
	assert.Zero(t, m.Running(), "a start that failed gives its slot back")

	r, err = m.Start(context.Background(), "quick", "", 0)
	require.NoError(t, err)
	require.False(t, r.IsError, r.Text())
	r = invoke(t, output, `{"task_id":"task-2","block":true}`)
	assert.Contains(t, r.Text(), "task-2 (quick): exited with code 0.\nOutput:\nquick started\nThe task has finished")

	_, err = m.Start(context.Background(), "left", "", 0)
	require.NoError(t, err)
	m.Close()
	cancel(errClosed)
	m.Wait()
	assert.Len(t, m.Tasks(), 1, "the ended task is kept until read")
	assert.True(t, m.Tasks()[0].Ended)
	r = invoke(t, output, `{"task_id":"task-3"}`)
	assert.ErrorIs(t, r.Err, errClosed)
	r, err = m.Start(context.Background(), "late", "", 0)
	require.NoError(t, err)
	assert.ErrorIs(t, r.Err, errClosed)
}

func TestTimeoutFor(t *testing.T) {
	d, lowered := TimeoutFor(0, time.Second, time.Minute)
	assert.Equal(t, time.Second, d)
	assert.False(t, lowered)
	d, lowered = TimeoutFor(1500, time.Second, time.Minute)
	assert.Equal(t, 1500*time.Millisecond, d)
	assert.False(t, lowered)
	d, lowered = TimeoutFor(120_000, time.Second, time.Minute)
	assert.Equal(t, time.Minute, d)
	assert.True(t, lowered)
}

func TestLimitsReportWhatIsWrong(t *testing.T) {
	var l Limits
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	l.SetTimeout(0, problem)
	l.SetMaxTimeout(-time.Second, problem)
	l.SetMaxOutput(0, problem)
	l.SetMaxTasks(0, problem)
	l.SetKillGrace(-1, problem)
	l.SetKillGrace(0, problem)
	assert.Equal(t, []string{
		"WithTimeout: the timeout must be positive, not 0s",
		"WithMaxTimeout: the maximum timeout must be positive, not -1s",
		"WithMaxOutput: n must be at least 1, not 0",
		"WithMaxTasks: n must be at least 1, not 0",
		"WithKillGrace: the grace period must not be negative, not -1ns",
	}, problems)
}
