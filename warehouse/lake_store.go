package warehouse

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Parts in an S3-compatible bucket (LakeConfig.S3): the bucket keeps the parts for
// good, and the lake directory is a cache of them, bounded by LakeConfig.CacheBytes.
//
//   - A part is written in the lake directory as without a bucket, then uploaded,
//     before the transaction that registers it: a registered part is in the bucket.
//     A part that cannot be uploaded fails its commit (ErrStorage), which the event
//     log's consumer retries, as a full disk's.
//   - Before DuckDB reads parts (a project's query, an export, a merge, the start's
//     deduplication window), those not in the directory are downloaded (ready). DuckDB
//     reads only local files: hedge links no S3 reader into it.
//   - Past CacheBytes the parts used longest ago are removed from the directory, of
//     those not used within the lake's grace (a query that read the catalog before may
//     still read them); a query of a project larger than the cache still downloads
//     all its parts, so the cache holds at most CacheBytes or the parts the queries of
//     the last grace read, whichever is more.
//   - The files a merge replaced are removed from the bucket with their copies after
//     the grace (removeGarbage); at start, the objects under the prefix that no part
//     or quarantined part names (a commit that uploaded and then failed, or a crash)
//     are removed.
//   - A part that fails to read is downloaded again before it is judged damaged: the
//     copy, not the part, may be what is damaged.
//
// Object keys are the prefix, then the part's path in the directory
// (team_id=N/date=D/name.parquet), so that the bucket reads as the directory does;
// each project's _current listing is uploaded beside its parts, naming them as s3://
// URLs.

// LakeS3 is the bucket that keeps the lake's parts.
type LakeS3 struct {
	// Endpoint is the server's host[:port]; Insecure speaks HTTP to it, not HTTPS.
	Endpoint string
	Insecure bool
	// Bucket holds the parts under Prefix ("" for its root).
	Bucket, Prefix string
	// AccessKey and SecretKey sign the requests; Region is the bucket's (default
	// us-east-1).
	AccessKey, SecretKey, Region string
}

// DefaultLakeCacheBytes is LakeConfig.CacheBytes when it is zero.
const DefaultLakeCacheBytes = 4 << 30

// transferTimeout bounds one upload or download of a part: the client retries within it.
const transferTimeout = 2 * time.Minute

var (
	lakeCacheBytes     = metrics.NewGauge(`hedge_lake_cache_bytes`, nil)
	lakePartsFetched   = metrics.NewCounter(`hedge_lake_parts_downloaded_total`)
	lakePartsEvicted   = metrics.NewCounter(`hedge_lake_parts_evicted_total`)
	lakePartsUploaded  = metrics.NewCounter(`hedge_lake_parts_uploaded_total`)
	lakeObjectsRemoved = metrics.NewCounter(`hedge_lake_objects_removed_total`)
)

// lakeRemote is the bucket and the lake directory's cache of it.
type lakeRemote struct {
	client         *minio.Client
	bucket, prefix string
	maxBytes       int64
	// mu guards cached and bytes; fetching serializes the downloads of one part.
	mu       sync.Mutex
	cached   map[string]*cachedPart // by part path
	bytes    int64
	fetching map[string]*sync.Mutex
}

// cachedPart is a part's file in the lake directory: its size and when a read last
// needed it.
type cachedPart struct {
	bytes int64
	used  time.Time
}

// openRemote connects to the bucket, which must exist.
func openRemote(ctx context.Context, cfg *LakeS3, maxBytes int64) (*lakeRemote, error) {
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: !cfg.Insecure, Region: region})
	if err != nil {
		return nil, fmt.Errorf("cannot use the lake's bucket: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, transferTimeout)
	defer cancel()
	ok, err := client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the lake's bucket %s at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !ok {
		return nil, fmt.Errorf("the lake's bucket %s does not exist at %s", cfg.Bucket, cfg.Endpoint)
	}
	if maxBytes <= 0 {
		maxBytes = DefaultLakeCacheBytes
	}
	return &lakeRemote{client: client, bucket: cfg.Bucket, prefix: strings.Trim(cfg.Prefix, "/"), maxBytes: maxBytes,
		cached: map[string]*cachedPart{}, fetching: map[string]*sync.Mutex{}}, nil
}

// key is the object key of a path relative to the lake directory.
func (r *lakeRemote) key(rel string) string {
	if r.prefix == "" {
		return rel
	}
	return r.prefix + "/" + rel
}

// url is the s3:// URL of a path relative to the lake directory.
func (r *lakeRemote) url(rel string) string { return "s3://" + r.bucket + "/" + r.key(rel) }

// upload puts part's file in the bucket; the file stays as a cached copy.
func (l *lake) upload(part lakePart) error {
	if l.remote == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), transferTimeout)
	defer cancel()
	if _, err := l.remote.client.FPutObject(ctx, l.remote.bucket, l.remote.key(part.Path), l.abs(part.Path),
		minio.PutObjectOptions{ContentType: "application/vnd.apache.parquet"}); err != nil {
		return fmt.Errorf("cannot upload part %s to the lake's bucket: %w", part.Path, err)
	}
	lakePartsUploaded.Inc()
	l.remote.cache(part.Path, part.Bytes, time.Now())
	return nil
}

// cache counts a part's file in the directory, used at used.
func (r *lakeRemote) cache(path string, bytes int64, used time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.cached[path]; c != nil {
		c.used = used
		return
	}
	r.cached[path] = &cachedPart{bytes: bytes, used: used}
	r.bytes += bytes
	lakeCacheBytes.Set(float64(r.bytes))
}

// ready makes sure the files of parts are in the lake directory, downloading those
// that are not, and marks them used; then it removes from the directory what the
// cache holds past its bound.
func (l *lake) ready(ctx context.Context, parts []lakePart) error {
	if l.remote == nil {
		return nil
	}
	now := time.Now()
	for _, p := range parts {
		if err := l.fetch(ctx, p, now, false); err != nil {
			return err
		}
	}
	l.evict(now)
	return nil
}

// fetch downloads part's file unless the cache holds it (or again, when fresh is set:
// the copy may be damaged), and marks it used at now.
func (l *lake) fetch(ctx context.Context, part lakePart, now time.Time, fresh bool) error {
	r := l.remote
	r.mu.Lock()
	if c := r.cached[part.Path]; c != nil && !fresh {
		c.used = now
		r.mu.Unlock()
		return nil
	}
	one := r.fetching[part.Path]
	if one == nil {
		one = &sync.Mutex{}
		r.fetching[part.Path] = one
	}
	r.mu.Unlock()
	one.Lock()
	defer func() {
		one.Unlock()
		r.mu.Lock()
		delete(r.fetching, part.Path)
		r.mu.Unlock()
	}()
	r.mu.Lock()
	c := r.cached[part.Path]
	r.mu.Unlock()
	if c != nil && !fresh { // downloaded meanwhile
		r.cache(part.Path, part.Bytes, now)
		return nil
	}
	path := l.abs(part.Path)
	tmp := path + ".download"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("cannot download part %s: %w", part.Path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, transferTimeout)
	defer cancel()
	if err := r.client.FGetObject(ctx, r.bucket, r.key(part.Path), tmp, minio.GetObjectOptions{}); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot download part %s from the lake's bucket: %w", part.Path, err)
	}
	if _, err := keepFile(tmp, path); err != nil {
		return fmt.Errorf("cannot keep the downloaded part %s: %w", part.Path, err)
	}
	lakePartsFetched.Inc()
	r.cache(part.Path, part.Bytes, now)
	return nil
}

// evict removes the files of the parts used longest ago while the cache holds more
// than its bound, of those not used within the grace before now.
func (l *lake) evict(now time.Time) {
	r := l.remote
	r.mu.Lock()
	if r.bytes <= r.maxBytes {
		r.mu.Unlock()
		return
	}
	type entry struct {
		path string
		used time.Time
	}
	var old []entry
	for path, c := range r.cached {
		if c.used.Before(now.Add(-l.cfg.Grace)) && r.fetching[path] == nil {
			old = append(old, entry{path, c.used})
		}
	}
	slices.SortFunc(old, func(a, b entry) int { return a.used.Compare(b.used) })
	var gone []string
	for _, e := range old {
		if r.bytes <= r.maxBytes {
			break
		}
		r.bytes -= r.cached[e.path].bytes
		delete(r.cached, e.path)
		gone = append(gone, e.path)
	}
	lakeCacheBytes.Set(float64(r.bytes))
	r.mu.Unlock()
	for _, path := range gone {
		if err := os.Remove(l.abs(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn("cannot remove a cached part of the lake", "path", path, "err", err)
		}
		lakePartsEvicted.Inc()
	}
}

// forget removes the objects of paths from the bucket and their copies from the
// cache's count (the caller removes the files).
func (l *lake) forget(ctx context.Context, paths []string) error {
	if l.remote == nil {
		return nil
	}
	r := l.remote
	r.uncache(paths)
	for _, p := range paths {
		if err := r.client.RemoveObject(ctx, r.bucket, r.key(p), minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("cannot remove part %s from the lake's bucket: %w", p, err)
		}
		lakeObjectsRemoved.Inc()
	}
	return nil
}

// uncache stops counting the files of paths in the cache.
func (r *lakeRemote) uncache(paths []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range paths {
		if c := r.cached[p]; c != nil {
			r.bytes -= c.bytes
			delete(r.cached, p)
		}
	}
	lakeCacheBytes.Set(float64(r.bytes))
}

// sweepRemote removes the objects under the prefix that are neither a part nor a
// quarantined part nor a listing (known: by path), and counts the parts' files the
// directory holds as cached, used longest ago.
func (l *lake) sweepRemote(ctx context.Context, catalog lakeCatalog, known map[string]bool) error {
	r := l.remote
	prefix := ""
	if r.prefix != "" {
		prefix = r.prefix + "/"
	}
	for object := range r.client.ListObjects(ctx, r.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if object.Err != nil {
			return fmt.Errorf("cannot list the lake's bucket: %w", object.Err)
		}
		rel := strings.TrimPrefix(object.Key, prefix)
		if known[rel] || filepath.Base(rel) == listingName {
			continue
		}
		l.log.Info("removing an object of the lake's bucket that no part names", "key", object.Key)
		if err := r.client.RemoveObject(ctx, r.bucket, object.Key, minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("cannot remove a stray object of the lake's bucket: %w", err)
		}
		lakeObjectsRemoved.Inc()
	}
	for _, parts := range catalog {
		for _, p := range parts {
			if info, err := os.Stat(l.abs(p.Path)); err == nil {
				r.cache(p.Path, info.Size(), time.Time{})
			}
		}
	}
	return nil
}

// publishRemote uploads a project's listing beside its parts in the bucket.
func (l *lake) publishRemote(team int64, rel, listing string) {
	ctx, cancel := context.WithTimeout(context.Background(), transferTimeout)
	defer cancel()
	if _, err := l.remote.client.PutObject(ctx, l.remote.bucket, l.remote.key(rel), strings.NewReader(listing), int64(len(listing)),
		minio.PutObjectOptions{ContentType: "text/plain"}); err != nil {
		l.log.Warn("cannot upload the listing of a project's parts", "project", team, "err", err)
	}
}
