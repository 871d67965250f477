package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hedge-analytics/hedge/admin"
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

// hedge runs with its soft limit on open files raised to the hard one, whatever soft
// limit it was started with: Go's runtime raises it at start to the hard limit less
// one (since Go 1.19; os/exec puts the old one back for children), so hedge needs no
// code of its own for it, and this test keeps it so.
func TestDescriptorLimitRaised(t *testing.T) {
	var limit unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &limit); err != nil || limit.Max <= 128 {
		t.Skipf("the hard limit on open files is %d (%v)", limit.Max, err)
	}
	dataDir := t.TempDir()
	cmd := exec.Command("sh", "-c", `ulimit -Sn 128 && exec "$0" serve`, hedgeBinary(t))
	cmd.Env = append(os.Environ(), "HEDGE_DATA="+dataDir, "HEDGE_ADMIN_ADDR=127.0.0.1:0", "HEDGE_CAPTURE_ADDR=127.0.0.1:0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Once hedge has written bootstrap.json, its main has run, and the runtime's start
	// long before it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dataDir, admin.BootstrapFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hedge wrote no bootstrap.json within a minute")
		}
	}
	var got unix.Rlimit
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_NOFILE, nil, &got); err != nil {
		t.Fatal(err)
	}
	if got.Cur < limit.Max-1 {
		t.Fatalf("hedge started with a soft limit of 128 runs with %d, want the hard limit %d (less one)", got.Cur, limit.Max)
	}
}
