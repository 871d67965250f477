package batchexport_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/hedge-analytics/hedge/internal/s3test"
)

const (
	s3AccessKey = s3test.AccessKey
	s3SecretKey = s3test.SecretKey
	s3Bucket    = "hedge-exports"
)

func startS3(t *testing.T) *s3test.Server { return s3test.New(t) }

// A run whose S3 server dies in the middle (after its first file is uploaded) fails,
// is retried after its backoff, and leaves each event in the bucket exactly once.
func TestS3ExportRetriedAfterServerStops(t *testing.T) {
	s3 := startS3(t)
	ctx := context.Background()
	if err := s3.Client(t).MakeBucket(ctx, s3Bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatal(err)
	}
	// Between hedge and the server, a proxy that kills the server once the first object
	// has been stored, when armed.
	target, _ := url.Parse("http://" + s3.Addr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var armed sync.Once
	var kill bool
	var killMu sync.Mutex
	proxy.ModifyResponse = func(resp *http.Response) error {
		killMu.Lock()
		defer killMu.Unlock()
		if kill && resp.Request.Method == http.MethodPut && resp.StatusCode == http.StatusOK && strings.Count(resp.Request.URL.Path, "/") > 2 {
			armed.Do(s3.Kill)
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

	s3.Restart(t)
	runs = env.settle(t, export, runs[0].NextAttemptAt.Add(time.Second), completed(1))
	if r := runs[0]; r.Attempts != 2 || *r.RecordsCompleted != 4 {
		t.Fatalf("the retried run: %+v", r)
	}

	// The bucket holds one object per date, under the prefix, each read back whole.
	download := t.TempDir()
	var keys []string
	for object := range s3.Client(t).ListObjects(ctx, s3Bucket, minio.ListObjectsOptions{Prefix: "hedge/", Recursive: true}) {
		if object.Err != nil {
			t.Fatal(object.Err)
		}
		keys = append(keys, object.Key)
		if err := s3.Client(t).FGetObject(ctx, s3Bucket, object.Key, filepath.Join(download, filepath.FromSlash(object.Key)), minio.GetObjectOptions{}); err != nil {
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
