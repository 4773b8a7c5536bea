package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/robfig/cron/v3"
)

// Cron is a run started on a schedule.
type Cron struct {
	// ID identifies the schedule.
	ID string `json:"cron_id"`
	// Schedule is a cron expression: five fields (minute, hour, day of
	// month, month, day of week), or a descriptor such as "@hourly" or
	// "@every 90s". Times are UTC.
	Schedule string `json:"schedule"`
	// Request is the run each firing starts. Without a Thread, each
	// firing starts a new thread; with one, StrategyEnqueue is usual.
	Request Request `json:"-"`
	// Next is when it fires next.
	Next time.Time `json:"next_run_at"`
	// CreatedAt is when it was scheduled.
	CreatedAt time.Time `json:"created_at"`
}

// cronRequest is what a schedule keeps of its Request.
type cronRequest struct {
	Graph       string          `json:"graph"`
	Thread      string          `json:"thread,omitempty"`
	IfNotExists IfNotExists     `json:"if_not_exists,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Strategy    Strategy        `json:"strategy,omitempty"`
	Metadata    map[string]any  `json:"metadata,omitempty"`
	Modes       uint16          `json:"modes,omitempty"`
	StepLimit   int             `json:"step_limit,omitempty"`
}

// cronParser reads the five-field syntax and the descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule starts req on a schedule (see Cron), beginning with the
// schedule's next time after now. A firing that finds its thread busy
// follows req.Strategy; one refused (StrategyReject) is skipped.
func (m *Manager) Schedule(ctx context.Context, schedule string, req Request) (Cron, error) {
	sched, err := cronParser.Parse(schedule)
	if err != nil {
		return Cron{}, fmt.Errorf("runs: %w: schedule %s: %w", ErrInvalid, quoteCut(schedule), err)
	}
	if req.Resume != nil || req.After != 0 {
		return Cron{}, fmt.Errorf("runs: %w: a scheduled run cannot resume a thread or be delayed", ErrInvalid)
	}
	if _, err := m.check(&req); err != nil {
		return Cron{}, err
	}
	body, err := json.Marshal(cronRequest{Graph: req.Graph, Thread: req.Thread, IfNotExists: req.IfNotExists, Input: req.Input,
		Strategy: req.Strategy, Metadata: req.Metadata, Modes: uint16(req.Modes), StepLimit: req.StepLimit})
	if err != nil {
		return Cron{}, fmt.Errorf("runs: %w: %w", ErrInvalid, err)
	}
	c := Cron{ID: uuid.Must(uuid.NewV7()).String(), Schedule: schedule, Request: req, CreatedAt: time.Now().UTC()}
	c.Next = sched.Next(c.CreatedAt).UTC()
	_, err = m.exec(ctx, nil, `INSERT INTO {crons} (cron_id, owner, schedule, request, next_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, c.ID, OwnerOf(ctx), schedule, string(body), c.Next.UnixMicro(), c.CreatedAt.UnixMicro())
	if err != nil {
		return Cron{}, fmt.Errorf("runs: schedule: %w", err)
	}
	return c, nil
}

// Crons lists the schedules, soonest first.
func (m *Manager) Crons(ctx context.Context) ([]Cron, error) {
	rows, err := m.query(ctx, nil, `SELECT cron_id, schedule, request, next_at, created_at FROM {crons}
		WHERE owner = $1 ORDER BY next_at, cron_id`, OwnerOf(ctx))
	if err != nil {
		return nil, fmt.Errorf("runs: list schedules: %w", err)
	}
	defer rows.Close()
	var out []Cron
	for rows.Next() {
		var (
			c             Cron
			body          string
			next, created int64
		)
		if err := rows.Scan(&c.ID, &c.Schedule, &body, &next, &created); err != nil {
			return nil, fmt.Errorf("runs: list schedules: %w", err)
		}
		var cr cronRequest
		if err := json.Unmarshal([]byte(body), &cr); err != nil {
			return nil, fmt.Errorf("runs: schedule %s: stored request: %w", c.ID, err)
		}
		c.Request = cr.request()
		c.Next, c.CreatedAt = fromMicros(next), fromMicros(created)
		out = append(out, c)
	}
	return out, rows.Err()
}

// Unschedule removes a schedule. Runs it started are not affected.
func (m *Manager) Unschedule(ctx context.Context, id string) error {
	res, err := m.exec(ctx, nil, `DELETE FROM {crons} WHERE cron_id = $1 AND owner = $2`, id, OwnerOf(ctx))
	if err != nil {
		return fmt.Errorf("runs: unschedule %s: %w", quoteCut(id), err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("runs: schedule %s: %w", quoteCut(id), ErrNotFound)
	}
	return nil
}

func (cr *cronRequest) request() Request {
	return Request{Graph: cr.Graph, Thread: cr.Thread, IfNotExists: cr.IfNotExists, Input: cr.Input, Strategy: cr.Strategy,
		Metadata: cr.Metadata, Modes: graphMode(cr.Modes), StepLimit: cr.StepLimit}
}

// cronTick is the periodic River job that starts the schedules that are
// due; River enqueues it on its elected leader only.
type cronTick struct{}

// Kind names the job's kind to River.
func (cronTick) Kind() string { return "trellis_cron_tick" }

type cronWorker struct {
	river.WorkerDefaults[cronTick]
	m *Manager
}

// Work starts the schedules that are due.
func (w *cronWorker) Work(ctx context.Context, _ *river.Job[cronTick]) error {
	return w.m.fireCrons(ctx)
}

func (m *Manager) fireCrons(ctx context.Context) error {
	var started []string
	err := m.tx(ctx, func(tx *sql.Tx) error {
		rows, err := m.query(ctx, tx, `SELECT cron_id, owner, schedule, request, {now} FROM {crons}
			WHERE next_at <= {now} ORDER BY next_at LIMIT 20{skiplocked}`)
		if err != nil {
			return err
		}
		type due struct {
			id, owner, schedule, body string
			now                       int64
		}
		var list []due
		for rows.Next() {
			var d due
			if err := rows.Scan(&d.id, &d.owner, &d.schedule, &d.body, &d.now); err != nil {
				rows.Close()
				return err
			}
			list = append(list, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, d := range list {
			next := time.Time{}
			if sched, err := cronParser.Parse(d.schedule); err == nil {
				next = sched.Next(fromMicros(d.now))
			}
			if next.IsZero() { // unparsable now, or never again
				if _, err := m.exec(ctx, tx, `DELETE FROM {crons} WHERE cron_id = $1`, d.id); err != nil {
					return err
				}
				continue
			}
			if _, err := m.exec(ctx, tx, `UPDATE {crons} SET next_at = $2 WHERE cron_id = $1`, d.id, next.UnixMicro()); err != nil {
				return err
			}
			var cr cronRequest
			if err := json.Unmarshal([]byte(d.body), &cr); err != nil {
				m.log.Warn("runs: a schedule's stored request does not decode; skipped", "cron", d.id, "error", err)
				continue
			}
			req := cr.request()
			r, err := m.check(&req)
			if err != nil {
				m.log.Warn("runs: a scheduled run was not started", "cron", d.id, "error", err)
				continue
			}
			run, err := m.start(ctx, tx, r, &req, d.owner, false)
			if errors.Is(err, ErrThreadBusy) || errors.Is(err, ErrNotFound) {
				m.log.Info("runs: a scheduled run was not started", "cron", d.id, "error", err)
				continue
			}
			if err != nil {
				return err
			}
			started = append(started, run.ID)
		}
		return nil
	})
	for _, id := range started {
		m.log.Debug("runs: scheduled run started", "run", id)
	}
	return err
}
