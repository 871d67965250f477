// Package s3test runs a real S3-compatible server for tests: versitygw with its posix
// backend, serving a temporary directory on a loopback port, as a separate process
// that a test may kill and start again. `make test` installs the pinned versitygw and
// points HEDGE_VERSITYGW at it; without one a test skips, unless
// HEDGE_REQUIRE_S3_TESTS is set.
package s3test

import (
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The server's credentials and region.
const (
	AccessKey = "hedge-test-access"
	SecretKey = "hedge-test-secret-key"
	Region    = "us-east-1"
)

// Server is a running versitygw; the test's cleanup kills it.
type Server struct {
	// Addr is its host:port on loopback; Root the directory its buckets are in.
	Addr, Root string
	bin        string
	mu         sync.Mutex
	cmd        *exec.Cmd
}

// New starts a server on a free loopback port, or skips the test when there is no
// versitygw.
func New(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv("HEDGE_VERSITYGW")
	if bin == "" {
		bin, _ = exec.LookPath("versitygw")
	}
	if bin == "" {
		if os.Getenv("HEDGE_REQUIRE_S3_TESTS") != "" {
			t.Fatal("HEDGE_REQUIRE_S3_TESTS is set but no versitygw was found: set HEDGE_VERSITYGW (make test installs it)")
		}
		t.Skip("no versitygw to test S3 against: run make test, or set HEDGE_VERSITYGW")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{bin: bin, Root: t.TempDir(), Addr: ln.Addr().String()}
	ln.Close()
	s.Restart(t)
	t.Cleanup(s.Kill)
	return s
}

// Restart runs the server on its address again (after Kill) and waits until it
// answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	cmd := exec.Command(s.bin, "--access", AccessKey, "--secret", SecretKey, "--port", s.Addr, "--quiet", "posix", s.Root)
	if os.Getenv("HEDGE_TEST_LOG") != "" {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not start on %s: %v", s.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill stops the server at once, as a crash would.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Client is a client of the server with its credentials.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: Region})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
