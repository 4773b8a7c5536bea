package docker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/docker"
)

// Example runs a command in a sandbox. A stand-in for the Docker daemon,
// which runs only echo, takes the place of a real one so that the example
// runs anywhere; with a real daemon, leave WithHost out.
func Example() {
	host, stop, err := docker.StartFakeDaemon()
	if err != nil {
		panic(err)
	}
	defer stop()

	ctx := context.Background()
	box, err := docker.New(ctx, "alpine:3.20", docker.WithHost(host),
		docker.WithMemory(512<<20), docker.WithCPUs(0.5))
	if err != nil {
		panic(err)
	}
	defer box.Close()

	tools, err := box.Tools(ctx)
	if err != nil {
		panic(err)
	}
	bash := tools[0]
	r := tool.Invoke(ctx, bash, model.ToolCall{ID: "call-1", Name: docker.BashName,
		Arguments: []byte(`{"command":"echo hello from the sandbox","description":"Say hello"}`)})
	fmt.Println(r.Text())
	md := tool.MetadataOf(bash)
	fmt.Println("destructive:", md.Destructive, "open world:", md.OpenWorld)
	// Output:
	// hello from the sandbox
	// Exit code: 0
	// destructive: true open world: false
}

// ExampleNew shows a sandbox for a coding agent: the project is mounted
// writable at /work, the rest of the file system is read-only but for an
// in-memory /tmp, and the container has no network. It needs a Docker
// daemon, so it does not run as a test.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	box, err := docker.New(ctx, "golang:1.26-alpine",
		docker.WithPull(), // pull the image if the daemon lacks it
		docker.WithMount("/home/me/project", "/work", false),
		docker.WithWorkdir("/work"),
		docker.WithReadOnlyRoot(),
		docker.WithTmpfs("/tmp", 256<<20),
		docker.WithEnv("GOCACHE=/tmp/gocache", "GOFLAGS=-mod=vendor"),
		docker.WithUser("1000:1000"),
		docker.WithMemory(2<<30), docker.WithCPUs(2), docker.WithPidsLimit(256),
		docker.WithTimeout(5*time.Minute))
	if err != nil {
		fmt.Println(err) // no daemon, no image, a refused option: the error says which
		return
	}
	defer box.Close() // kills and removes the container
	// Give box to an agent: agent.NewReAct(m, agent.WithToolsets(box)).
	fmt.Println("commands run in", box.Workdir(), "in container", box.ContainerID()[:12])
}

// ExampleWithTLS reaches a remote daemon over TLS with certificates the
// program holds (DOCKER_TLS_VERIFY and DOCKER_CERT_PATH do the same from
// the environment). It needs such a daemon, so it does not run as a test.
func ExampleWithTLS() {
	caPEM := []byte("-----BEGIN CERTIFICATE-----\n...") // the CA that signed the daemon's certificate
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair("/etc/myapp/docker-cert.pem", "/etc/myapp/docker-key.pem")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	box, err := docker.New(ctx, "alpine:3.20", docker.WithHost("tcp://builder.internal:2376"),
		docker.WithTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer box.Close()
}
