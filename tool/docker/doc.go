// Package docker lets an agent run shell commands in a Docker container,
// a sandbox with resource limits and, by default, no network:
//
//	box, err := docker.New(ctx, "golang:1.26-alpine",
//		docker.WithMount("/home/me/project", "/work", false),
//		docker.WithWorkdir("/work"),
//		docker.WithMemory(2<<30), docker.WithCPUs(2))
//	...
//	defer box.Close() // removes the container
//	coder, err := agent.NewReAct(m, agent.WithToolsets(box))
//
// It is tool/shell's sandboxed counterpart, and its tools read the same to
// a model: bash takes command, timeout_ms, run_in_background and
// description, and returns the output, standard output and error together in the order received, then
// "Exit code: N". A non-zero exit code is an error result (ErrorCode
// CodeNonZeroExit, Err an *ExitError) that still shows the output; a
// command that runs past its timeout is stopped and its result says so
// (CodeCommandTimeout, ErrTimedOut). Output beyond WithMaxOutput bytes
// loses its middle, and a line says how many bytes were left out. Results
// carry a Report in Details.
//
// # Background tasks
//
// The toolset has tool/shell's background tasks too, under the same names
// and arguments. bash with run_in_background starts the command in the
// container and returns its ID (task-1, task-2, ...; "1", "01" and
// "task-01" name task-1 too) at once; the command has no timeout unless
// the call's timeout_ms gives one. task_output returns what the task wrote
// since the previous read, and whether it is running or how it ended; with
// block, it first waits for the task to finish, at most timeout_ms
// (WithTimeout's default, up to WithMaxTimeout). task_stop stops the task
// as a timeout does (SIGTERM, then SIGKILL after WithKillGrace) and
// returns its last output. A task keeps the last WithMaxOutput bytes of
// its unread output, and a read says how many were dropped before them. At
// most WithMaxTasks tasks run at once. A finished task is kept until its
// final output has been read, or until more than MaxFinishedTasks
// finished tasks are kept. A task is followed until the daemon reports
// that its exec ended, even after it closes its output. When the daemon
// fails or goes away while a task runs, the task ends in StateFailed, and
// its status names the daemon. Tasks lists the tasks kept. bash and
// task_stop are marked Destructive, task_output ReadOnly.
//
// # The Docker daemon
//
// The package speaks the Docker Engine API itself, over HTTP, with no
// Docker library: to the daemon at WithHost, or DOCKER_HOST, or
// DefaultHost (unix:///var/run/docker.sock). A tcp://host:port address is
// spoken to in plain HTTP, or in TLS with WithTLS or DOCKER_TLS_VERIFY
// (and the certificates of DOCKER_CERT_PATH); an ssh://[user@]host
// address is reached through the ssh command, which runs "docker system
// dial-stdio" on the host. Named pipes (Docker on Windows) and Docker
// contexts are not supported. New asks the daemon for its API version (GET /_ping) and
// speaks it, up to the newest version the package knows; it needs 1.25
// (Docker 1.13) or later. The daemon must already have the image, unless
// WithPull lets New pull it: a missing image is an error wrapping
// ErrImageNotFound that names it. A daemon that does not answer, or that
// refuses a request, is an error naming its address; a refusal is an
// *APIError with the daemon's message.
//
// # The sandbox
//
// New creates one container and starts it; every bash call runs its
// command in it, as a new process (an exec) with sh -c (WithShell picks
// another shell), so files written stay for the next call, while a cd or a
// variable does not carry over. Close kills and removes the container,
// and with it everything written but to writable mounts. The container:
//
//   - has no network but loopback (WithNetwork gives it one, and then
//     bash is marked OpenWorld);
//   - may use WithMemory bytes of memory (1 GiB), with no swap: a command
//     that needs more is killed by the kernel, with exit code 137;
//   - may use WithCPUs CPUs' worth of time (1; the daemon refuses more
//     than its host has) and WithPidsLimit processes and threads at once
//     (512), which keeps a fork bomb from reaching the host; a command
//     that fills the limit cannot be stopped, though, since stopping it
//     takes a new process in the container (see below), and only Close
//     ends it;
//   - runs its processes with no Linux capabilities (CapDrop ALL) and
//     with no-new-privileges, so that neither root in the container nor a
//     setuid program gets privileges back: a command cannot mount file
//     systems, change file owners or open raw sockets (it can still bind
//     ports below 1024: Docker sets net.ipv4.ip_unprivileged_port_start to
//     0 in every container with a network namespace of its own, "none"
//     included);
//   - runs as the image's user unless WithUser says otherwise;
//   - sees the host's files only through WithMount, read-only or
//     writable as asked: a writable mount is the one way a command can
//     change the host's files;
//   - has a writable root file system, discarded by Close, unless
//     WithReadOnlyRoot; WithTmpfs adds in-memory scratch space;
//   - sees none of the process's environment, only the image's and
//     WithEnv's;
//   - runs a keep-alive shell under Docker's init process instead of the
//     image's entrypoint and command, so the image needs sh; the shell
//     ignores SIGTERM, so a command such as `killall sh` does not end the
//     container.
//
// With every capability dropped, root in the container cannot write into a
// mounted directory that another user of the host owns: WithUser with the
// directory's owner makes a project mount writable.
//
// The kernel is the host's: the container is as strong a boundary as
// Docker's isolation on that host, which is weaker than a virtual
// machine's. bash is marked Destructive, since a command can change
// everything writable in the container and in writable mounts; a
// permission policy can still ask a person before each command.
//
// # Stopping commands
//
// The Engine API cannot kill an exec, so each command carries a random tag
// in its environment (the variable TRELLIS_DOCKER_RUN), which the
// processes it starts inherit. At the timeout (WithTimeout, or the call's
// timeout_ms up to WithMaxTimeout), when the call's context ends, and
// when task_stop stops a background task, a second exec finds the
// processes with the tag in /proc and sends them SIGTERM, and SIGKILL
// after WithKillGrace; this needs grep and kill in the image, which
// busybox and every common base image have. A process
// that clears its environment, or runs as another user, is out of reach;
// when the command's output has not ended a moment after SIGKILL, the
// call stops waiting and its result says that processes may still run in
// the container (Report.Escaped). Close ends them all with the container.
// A command's standard input is empty: one that waits for input reads
// end-of-file instead of hanging. Close ends every command, background
// tasks included, and waits for them before it removes the container.
package docker
