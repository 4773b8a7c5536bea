// Package shell lets an agent run shell commands in one directory, in the
// foreground or as background tasks:
//
//	sh, err := shell.New("./project")
//	...
//	defer sh.Close()
//	coder, err := agent.NewReAct(m, agent.WithToolsets(sh),
//		agent.WithMiddleware(middleware.Permission(approveCommands)))
//
// The Toolset offers three tools:
//
//   - bash runs a command with /bin/sh -c (WithShell picks another shell)
//     and returns its standard output and error together, in the order
//     written, and its exit code. A non-zero exit code is an error result
//     (ErrorCode CodeNonZeroExit) that still shows the output, for the
//     model to read what failed; so is a command killed at its timeout
//     (CodeCommandTimeout). With run_in_background, bash starts the command
//     as a task and returns its ID (task-1, task-2, ...) at once.
//   - task_output returns what a task wrote since the previous read, and
//     whether it is running or how it ended; with block, it first waits
//     for the task to finish.
//   - task_stop kills a task.
//
// # Not a sandbox
//
// The commands run with the rights of the process: they can read and change
// every file it can, reach the network, leave the directory (which is only
// where they start) and see its environment (WithCleanEnv keeps it out).
// Give this toolset to a model only with a permission policy that has a
// person approve each command, or only in a disposable container or
// virtual machine; package docker offers the same tools with the commands
// in a container. bash and task_stop are marked Destructive, so a policy
// can tell them apart from task_output, which is read-only:
//
//	approveCommands := tool.PolicyFunc(func(ctx context.Context, req tool.PermissionRequest) (tool.Decision, error) {
//		if !req.Metadata.Destructive {
//			return tool.Allow(), nil
//		}
//		var args shell.BashArgs
//		_ = json.Unmarshal(req.Call.Arguments, &args)
//		if askPerson(ctx, req.Call.Name, args.Command) { // your approval flow
//			return tool.Allow(), nil
//		}
//		return tool.Deny("the user refused to run it"), nil
//	})
//
// # Processes
//
// Every command runs in a process group of its own (on unix), with an
// empty standard input: a command that waits for input reads end-of-file
// instead of hanging. When a foreground command runs past its timeout
// (WithTimeout, or the call's timeout_ms up to WithMaxTimeout), when its
// call's context ends, when task_stop stops a task and when the toolset is
// closed, the group is sent SIGTERM, and SIGKILL after WithKillGrace: the
// processes the command started within the group end with it. Processes a
// command leaves running when it exits are killed, and the result says so;
// servers belong in a background task, which runs until its own shell
// exits.
//
// A process that leaves the group (setsid, a daemon's double fork) is
// found on Linux by a tag every command puts in its processes' environment
// (the variable TRELLIS_SHELL_RUN), and is signalled and killed with the
// group; one that removes the variable from its environment, or one on
// another system, survives, and the result of a timeout or task_stop says
// what was killed — the process group, and how many processes were found
// outside it — and no more. Such a process cannot hang a call by holding
// the output open: after the shell ends, the output is waited for at most
// the grace period. Outside unix there are no process groups: only the
// shell itself is killed.
//
// # Output
//
// A foreground result shows at most WithMaxOutput bytes (DefaultMaxOutput):
// a longer output loses its middle, and a line says how many bytes were
// left out; cuts fall between characters. A background task keeps the last
// WithMaxOutput bytes of its unread output, and a read says how many bytes
// were dropped before them. At most WithMaxTasks tasks run at once. A
// finished task is kept until its final output has been read, or until
// more than MaxFinishedTasks finished tasks are kept.
//
// Close kills every command still running, background tasks included, and
// waits for them; calls made after it are error results. Results carry a
// Report in Details, for logs and user interfaces; Tasks lists the tasks
// kept.
package shell
