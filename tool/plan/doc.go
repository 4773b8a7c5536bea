// Package plan holds the planning tools of an agent: todo_write (Write),
// with which a model keeps a plan for a task of several steps in the
// run's state, and todo_declare_blocker (DeclareBlocker), with which it
// says why it cannot finish it. A state keeps the plan by embedding Plan
// by value; Reminder renders it for a system prompt.
//
// The nudges that keep an agent at work while its plan has open items are
// graph nodes, and live in nodes (PlanCondition, PlanNudge,
// PlanNudgeCommand) and agent (WithPlanNudges).
package plan
