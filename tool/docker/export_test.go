package docker

// StartFakeDaemon starts an in-process stand-in for the Docker daemon, for
// the examples: it has the image alpine:3.20 and runs the command
// "echo TEXT" (and no other). It returns the daemon's address and a
// function that stops it.
func StartFakeDaemon() (host string, stop func(), err error) {
	f, err := startFake("unix")
	if err != nil {
		return "", nil, err
	}
	return f.host, f.close, nil
}
