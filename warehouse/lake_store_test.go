package warehouse

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/hedge-analytics/hedge/internal/s3test"
)

// TestLakeS3: with a bucket, every registered part is in it (and its listing, naming
// s3:// URLs); a hedge whose lake directory was lost answers from the bucket; the
// cache gives back the parts used longest ago past its bound, and they are downloaded
// again when read; a merge uploads its part and the replaced objects go after the
// grace; an object no part names goes at start; and while the bucket cannot be
// reached a commit fails with ErrStorage, leaving nothing, and succeeds once it can.
func TestLakeS3(t *testing.T) {
	s3 := s3test.New(t)
	ctx := context.Background()
	const bucket = "hedge-lake"
	client := s3.Client(t)
	if err := client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: s3test.Region}); err != nil {
		t.Fatal(err)
	}
	objects := func() []string {
		t.Helper()
		var keys []string
		for o := range client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			keys = append(keys, o.Key)
		}
		slices.Sort(keys)
		return keys
	}
	// The bucket's parts, the listings left out.
	parts := func() []string {
		return slices.DeleteFunc(objects(), func(k string) bool { return strings.HasSuffix(k, "/"+listingName) })
	}
	prefixed := func(paths []string) []string {
		out := make([]string, len(paths))
		for i, p := range paths {
			out[i] = "events/" + p
		}
		return out
	}
	env := newLakeEnv(t, Config{Lake: LakeConfig{CompactParts: 2, CacheBytes: 1, Grace: 50 * time.Millisecond,
		S3: &LakeS3{Endpoint: s3.Addr, Insecure: true, Bucket: bucket, Prefix: "/events/", AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey}}})

	submit := func(events []Event) error {
		return env.w.Writer().Submit(&Batch{Events: events})
	}
	if err := submit(append(lakeEvents(1, "2026-11-02", 20), lakeEvents(2, "2026-11-02", 4)...)); err != nil {
		t.Fatal(err)
	}
	if err := submit(lakeEvents(1, "2026-11-03", 6)); err != nil {
		t.Fatal(err)
	}
	if got, want := parts(), prefixed(env.catalog()); len(want) != 3 || !slices.Equal(got, want) {
		t.Fatalf("the bucket holds %v, the catalog %v", got, want)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(objects(), "events/team_id=1/"+listingName) {
		if time.Now().After(deadline) {
			t.Fatal("the listing of project 1 never reached the bucket")
		}
		time.Sleep(50 * time.Millisecond)
	}
	listing, err := LakeFiles(env.cfg.LakeDir, 1)
	if err != nil || len(listing) != 2 || !strings.HasPrefix(listing[0], "s3://"+bucket+"/events/team_id=1/date=") {
		t.Fatalf("the listing of project 1: %v %v", listing, err)
	}

	// The lake directory lost: the answers come from the bucket.
	env.w.Close()
	if err := os.RemoveAll(env.cfg.LakeDir); err != nil {
		t.Fatal(err)
	}
	env.w = openTestWarehouse(t, env.path, env.cfg)
	// The start downloaded the deduplication window's parts, every project's; once
	// the grace is over, project 1's query gives back those it does not read.
	time.Sleep(100 * time.Millisecond)
	if n := env.count(1); n != 26 {
		t.Fatalf("project 1 counts %d events from the bucket, want 26", n)
	}
	onDisk := func(team string) int {
		n := 0
		for _, f := range env.files() {
			if strings.HasPrefix(f, "team_id="+team+"/") {
				n++
			}
		}
		return n
	}
	if onDisk("1") != 2 || onDisk("2") != 0 {
		t.Fatalf("after project 1's query the directory holds %v", env.files())
	}
	// A byte of cache: once the grace is over, reading project 2 gives back project 1's
	// files; read again, they come back.
	time.Sleep(100 * time.Millisecond)
	if n := env.count(2); n != 4 || onDisk("1") != 0 || onDisk("2") != 1 {
		t.Fatalf("project 2 counts %d; the directory holds %v, want project 2's part alone", n, env.files())
	}
	if n := env.count(1); n != 26 || onDisk("1") != 2 {
		t.Fatalf("project 1 counts %d again; the directory holds %v", n, env.files())
	}

	// A merge of project 1's two parts of Nov 2 (a second commit makes two): its part
	// is uploaded, the replaced objects go after the grace.
	if err := submit(lakeEvents(1, "2026-11-02", 3)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := env.w.lake.compact(ctx, now); err != nil {
		t.Fatal(err)
	}
	if err := env.w.lake.removeGarbage(ctx, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, want := parts(), prefixed(env.catalog()); len(want) != 3 || !slices.Equal(got, want) {
		t.Fatalf("after a merge the bucket holds %v, the catalog %v", got, want)
	}
	if n := env.count(1); n != 29 {
		t.Fatalf("project 1 counts %d events after the merge, want 29", n)
	}

	// An object no part names (a commit that uploaded, then failed) goes at start.
	stray := "events/team_id=1/date=2026-11-02/stray.parquet"
	if _, err := client.PutObject(ctx, bucket, stray, strings.NewReader("x"), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	env.reopen()
	if slices.Contains(objects(), stray) {
		t.Fatal("the stray object is still in the bucket after a start")
	}

	// The bucket unreachable: the commit fails with ErrStorage and leaves no part, no
	// file; once it is back, the same events commit.
	before := env.files()
	s3.Kill()
	late := lakeEvents(2, "2026-11-04", 5)
	if err := submit(late); !errors.Is(err, ErrStorage) {
		t.Fatalf("a commit without the bucket: %v, want ErrStorage", err)
	}
	if got := env.files(); !slices.Equal(got, before) || len(env.catalog()) != 3 {
		t.Fatalf("a failed commit left files %v (before %v), catalog %v", got, before, env.catalog())
	}
	s3.Restart(t)
	if err := submit(late); err != nil {
		t.Fatal(err)
	}
	if n := env.count(2); n != 9 {
		t.Fatalf("project 2 counts %d events, want 9", n)
	}
	if got, want := parts(), prefixed(env.catalog()); len(want) != 4 || !slices.Equal(got, want) {
		t.Fatalf("at the end the bucket holds %v, the catalog %v", got, want)
	}
}
