package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Out of file descriptors, the listeners wait and go on accepting: hedge keeps serving
// once connections are closed, and counts the failed accepts.
func TestOutOfDescriptors(t *testing.T) {
	p, _, _ := startServing(t)
	pid := p.cmd.Process.Pid
	open, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Skipf("cannot count the process's descriptors: %v", err)
	}
	var was unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &was); err != nil {
		t.Skipf("cannot read the process's descriptor limit: %v", err)
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: uint64(len(open) + 16), Max: was.Max}, nil); err != nil {
		t.Skipf("cannot lower the process's descriptor limit: %v", err)
	}
	capture, _ := url.Parse(p.captureURL)
	var conns []net.Conn
	for range 64 { // more than the limit leaves: accepts fail with EMFILE
		c, err := net.DialTimeout("tcp", capture.Host, time.Second)
		if err != nil {
			break
		}
		c.Write([]byte("GET /_health HTTP/1.1\r\nHost: x\r\n")) // half a request
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond)
	for _, c := range conns {
		c.Close()
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &was, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(p.captureURL + "/_health")
		if err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("capture no longer serves: %v\n%s", err, p.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case <-p.exited:
		t.Fatalf("hedge exited:\n%s", p.log())
	default:
	}
	resp, err := http.Get(p.adminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`hedge_accept_errors_total\{listener="capture"\} (\d+)`).FindSubmatch(text)
	if m == nil || string(m[1]) == "0" {
		t.Fatalf("accept errors not counted: %s", m)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("hedge exited %d", code)
	}
}
