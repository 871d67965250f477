package batchexport_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	s3AccessKey = "hedge-test-access"
	s3SecretKey = "hedge-test-secret-key"
	s3Bucket    = "hedge-exports"
)

// s3Server is a real S3-compatible server, versitygw with its posix backend, serving a
// temporary directory on a loopback port. `make test` installs the pinned versitygw
// and points HEDGE_VERSITYGW at it.
type s3Server struct {
	bin, root, addr string
	mu              sync.Mutex
	cmd             *exec.Cmd
}

func startS3(t *testing.T) *s3Server {
	t.Helper()
	bin := os.Getenv("HEDGE_VERSITYGW")
	if bin == "" {
		bin, _ = exec.LookPath("versitygw")
	}
	if bin == "" {
		if os.Getenv("HEDGE_REQUIRE_S3_TESTS") != "" {
			t.Fatal("HEDGE_REQUIRE_S3_TESTS is set but no versitygw was found: set HEDGE_VERSITYGW (make test installs it)")
		}
		t.Skip("no versitygw to test S3 exports against: run make test, or set HEDGE_VERSITYGW")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &s3Server{bin: bin, root: t.TempDir(), addr: ln.Addr().String()}
	ln.Close()
	s.start(t)
	t.Cleanup(s.kill)
	return s
}

// start runs the server on its address and waits until it answers.
func (s *s3Server) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(s.bin, "--access", s3AccessKey, "--secret", s3SecretKey, "--port", s.addr, "--quiet", "posix", s.root)
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
		conn, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not start on %s: %v", s.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill stops the server at once, as a crash would.
func (s *s3Server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

func (s *s3Server) client(t *testing.T) *minio.Client {
	t.Helper()
	c, err := minio.New(s.addr, &minio.Options{Creds: credentials.NewStaticV4(s3AccessKey, s3SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A run whose S3 server dies in the middle (after its first file is uploaded) fails,
// is retried after its backoff, and leaves each event in the bucket exactly once.
func TestS3ExportRetriedAfterServerStops(t *testing.T) {
	s3 := startS3(t)
	ctx := context.Background()
	if err := s3.client(t).MakeBucket(ctx, s3Bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatal(err)
	}
	// Between hedge and the server, a proxy that kills the server once the first object
	// has been stored, when armed.
	target, _ := url.Parse("http://" + s3.addr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var armed sync.Once
	var kill bool
	var killMu sync.Mutex
	proxy.ModifyResponse = func(resp *http.Response) error {
		killMu.Lock()
		defer killMu.Unlock()
		if kill && resp.Request.Method == http.MethodPut && resp.StatusCode == http.StatusOK && strings.Count(resp.Request.URL.Path, "/") > 2 {
			armed.Do(s3.kill)
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	defer front.Close()

	env := newExportEnv(t)
	export := env.createExport(t, "events", fmt.Sprintf(`{"type": "S3", "config": {"bucket_name": %q, "region": "us-east-1", "prefix": "hedge",
		"endpoint_url": %q, "aws_access_key_id": %q, "aws_secret_access_key": %q, "file_format": "Parquet", "compression": "snappy"}}`,
		s3Bucket, front.URL, s3AccessKey, s3SecretKey))
	day1, day2 := env.origin.Add(-48*time.Hour), env.origin.Add(-time.Hour)
	events := env.ingest(t, env.at(time.Minute), testEvent{"$pageview", "u1", day1, "", ""}, testEvent{"$pageview", "u2", day1, "", ""},
		testEvent{"$pageview", "u1", day2, "", ""}, testEvent{"$autocapture", "u3", day2, "", ""})

	killMu.Lock()
	kill = true
	killMu.Unlock()
	runs := env.settle(t, export, env.at(6*time.Minute), func(runs []runRecord) bool {
		return len(runs) == 1 && runs[0].Status == "FailedRetryable"
	})
	if r := runs[0]; r.Attempts != 1 || r.LatestError == nil || !strings.Contains(*r.LatestError, "cannot upload") || r.NextAttemptAt == nil {
		t.Fatalf("the failed run: %+v", r)
	}

	s3.start(t)
	runs = env.settle(t, export, runs[0].NextAttemptAt.Add(time.Second), completed(1))
	if r := runs[0]; r.Attempts != 2 || *r.RecordsCompleted != 4 {
		t.Fatalf("the retried run: %+v", r)
	}

	// The bucket holds one object per date, under the prefix, each read back whole.
	download := t.TempDir()
	var keys []string
	for object := range s3.client(t).ListObjects(ctx, s3Bucket, minio.ListObjectsOptions{Prefix: "hedge/", Recursive: true}) {
		if object.Err != nil {
			t.Fatal(object.Err)
		}
		keys = append(keys, object.Key)
		if err := s3.client(t).FGetObject(ctx, s3Bucket, object.Key, filepath.Join(download, filepath.FromSlash(object.Key)), minio.GetObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wantKeys := []string{
		fmt.Sprintf("hedge/team_id=%d/date=%s/%s.parquet", env.team, day1.Format(time.DateOnly), runs[0].ID),
		fmt.Sprintf("hedge/team_id=%d/date=%s/%s.parquet", env.team, day2.Format(time.DateOnly), runs[0].ID),
	}
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("objects %v, want %v", keys, wantKeys)
	}
	want := sorted(events)
	if got := checkEventFiles(t, download); !slices.Equal(got, want) {
		t.Fatalf("arrow-go reads %v from the bucket, want each of %v once", got, want)
	}
	var got []string
	for _, e := range readEventsWithDuckDB(t, filepath.Join(download, "hedge")) {
		got = append(got, e.uuid)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("DuckDB reads %v from the bucket, want each of %v once", got, want)
	}
}
