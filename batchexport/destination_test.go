package batchexport_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/minio/minio-go/v7"

	"github.com/hedge-analytics/hedge/batchexport"
)

// startDNS runs a real DNS server (miekg/dns) on a loopback UDP port that answers A
// and AAAA queries from records (name -> addresses); other names are NXDOMAIN. It
// returns a resolver that asks it.
func startDNS(t *testing.T, records map[string][]string) *net.Resolver {
	t.Helper()
	zone := map[string][]netip.Addr{}
	for name, addrs := range records {
		for _, a := range addrs {
			zone[dns.Fqdn(name)] = append(zone[dns.Fqdn(name)], netip.MustParseAddr(a))
		}
	}
	var mu sync.Mutex
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		mu.Lock()
		defer mu.Unlock()
		reply := new(dns.Msg)
		reply.SetReply(req)
		for _, q := range req.Question {
			addrs, ok := zone[strings.ToLower(q.Name)]
			if !ok {
				reply.Rcode = dns.RcodeNameError
				continue
			}
			for _, a := range addrs {
				hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 60}
				switch {
				case q.Qtype == dns.TypeA && a.Is4():
					hdr.Rrtype = dns.TypeA
					reply.Answer = append(reply.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
				case q.Qtype == dns.TypeAAAA && a.Is6():
					hdr.Rrtype = dns.TypeAAAA
					reply.Answer = append(reply.Answer, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
				}
			}
		}
		w.WriteMsg(reply)
	})
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := &dns.Server{PacketConn: conn, Handler: handler}
	started := make(chan struct{})
	server.NotifyStartedFunc = func() { close(started) }
	go server.ActivateAndServe()
	<-started
	t.Cleanup(func() { server.Shutdown() })
	addr := conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// An S3 endpoint_url that names an address outside the public internet is refused
// when the export is saved, whichever way the address is written: the special-purpose
// blocks of IPv4 and IPv6, and IPv6 forms that carry an IPv4 address (mapped,
// compatible, NAT64, 6to4), judged by that address.
func TestEndpointMustBePublic(t *testing.T) {
	policy := batchexport.Policy{}
	f := func(endpoint string, public bool) {
		t.Helper()
		config := map[string]any{"bucket_name": "bucket", "region": "r", "aws_access_key_id": "k", "aws_secret_access_key": "s", "endpoint_url": endpoint}
		err := policy.Check(1, batchexport.S3, config)
		var invalid *batchexport.InvalidConfig
		switch {
		case public && err != nil:
			t.Errorf("%s is public, refused: %v", endpoint, err)
		case !public && !errors.As(err, &invalid):
			t.Errorf("%s is not public, accepted (%v)", endpoint, err)
		}
	}
	for _, endpoint := range []string{
		"http://0.0.0.0", "http://0.1.2.3", "http://10.1.2.3", "http://100.64.0.1", "http://100.127.255.254", "http://127.0.0.1:9000",
		"http://169.254.169.254", "http://172.16.0.1", "http://172.31.255.255", "http://192.0.0.8", "http://192.0.2.1",
		"http://192.88.99.1", "http://192.168.1.1", "http://198.18.0.1", "http://198.19.255.255", "http://198.51.100.7",
		"http://203.0.113.9", "http://224.0.0.1", "http://239.255.255.250", "http://240.0.0.1", "http://255.255.255.255",
		"http://[::]", "http://[::1]", "http://[::ffff:127.0.0.1]", "http://[::ffff:10.0.0.1]", "http://[::127.0.0.1]",
		"http://[::a00:1]", "http://[64:ff9b::7f00:1]", "http://[64:ff9b::a9fe:a9fe]", "http://[64:ff9b:1::8.8.8.8]",
		"http://[100::1]", "http://[2001::1]", "http://[2001:2::1]", "http://[2001:db8::1]", "http://[2002:7f00:1::1]",
		"http://[2002:a00:1::1]", "http://[3fff::1]", "http://[5f00::1]", "http://[fc00::1]", "http://[fd12:3456::1]",
		"http://[fe80::1]", "http://[fe80::1%25eth0]", "http://[ff02::1]", "http://[::ffff:0:7f00:1]",
		"http://localhost", "http://LocalHost.", "http://s3.localhost", "http://s3.localhost.",
	} {
		f(endpoint, false)
	}
	for _, endpoint := range []string{
		"https://s3.example.com", "https://s3.eu-west-1.amazonaws.com", "http://8.8.8.8", "http://1.1.1.1:9000",
		"http://100.63.255.255", "http://100.128.0.1", "http://198.20.0.1", "http://[2606:4700:4700::1111]",
		"http://[::ffff:8.8.8.8]", "http://[64:ff9b::808:808]", "http://[2002:808:808::1]", "http://[2620:4f:8000::1]",
	} {
		f(endpoint, true)
	}
}

// At upload time, hedge dials only public addresses: an endpoint whose name resolves
// to an address outside the public internet is refused on the address dialled, and
// the run's error says so without telling what the name resolved to, or whether it
// resolved at all, so that exports cannot map the names of hedge's network.
func TestS3DialRefusesNonPublicAddresses(t *testing.T) {
	s3 := startS3(t)
	_, port, _ := net.SplitHostPort(s3.Addr)
	resolver := startDNS(t, map[string][]string{
		"loopback.hedge.test": {"127.0.0.1"},
		"cgnat.hedge.test":    {"100.64.0.1"},
		"bench.hedge.test":    {"198.18.0.1"},
		"nat64.hedge.test":    {"64:ff9b::7f00:1"},
		"compat.hedge.test":   {"::7f00:1"},
		"mapped.hedge.test":   {"::ffff:127.0.0.1"},
		"sixto4.hedge.test":   {"2002:7f00:1::1"},
	})
	env := newExportEnvWith(t, func(c *batchexport.Config) { c.Policy.AllowPrivateEndpoints, c.Policy.Resolver = false, resolver })
	env.ingest(t, env.at(time.Minute), testEvent{"$pageview", "u1", env.at(time.Minute), "", ""})
	hosts := []string{"loopback", "cgnat", "bench", "nat64", "compat", "mapped", "sixto4", "missing"}
	exports := map[string]string{}
	if err := s3.Client(t).MakeBucket(context.Background(), s3Bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		t.Fatal(err)
	}
	for _, host := range hosts {
		exports[host] = env.createExport(t, "events", fmt.Sprintf(`{"type": "S3", "config": {"bucket_name": %q, "region": "us-east-1",
			"endpoint_url": "http://%s.hedge.test:%s", "aws_access_key_id": %q, "aws_secret_access_key": %q}}`,
			s3Bucket, host, port, s3AccessKey, s3SecretKey))
	}
	env.clock.Set(env.at(6 * time.Minute))
	env.runner.Wake()
	for _, host := range hosts {
		runs := env.settle(t, exports[host], env.at(6*time.Minute), func(runs []runRecord) bool {
			return len(runs) == 1 && runs[0].Status == "FailedRetryable"
		})
		got := *runs[0].LatestError
		want := fmt.Sprintf("the endpoint's host %s.hedge.test does not resolve to a public address", host)
		if !strings.Contains(got, want) {
			t.Errorf("%s: latest_error %q, want it to say %q", host, got, want)
		}
		for _, leak := range []string{"127.0.0.1", "100.64", "198.18", "64:ff9b", "::7f00", "::ffff", "2002:", "no such host", "lookup", "dial"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: latest_error %q tells %q", host, got, leak)
			}
		}
	}
	// Nothing reached the server behind loopback.hedge.test.
	for object := range s3.Client(t).ListObjects(context.Background(), s3Bucket, minio.ListObjectsOptions{Recursive: true}) {
		t.Fatalf("the bucket holds %s: %v", object.Key, object.Err)
	}
}

// parquetDestination is the destination JSON of a Parquet export to path.
func parquetDestination(path string) string {
	return fmt.Sprintf(`{"type": "Parquet", "config": {"path": %q}}`, path)
}

// Each project's Parquet files stay in its own directory of an export root: a
// relative path is below <data>/exports/<project id>/, an absolute one must be
// below <root>/<project id>/ of a root the operator allowed. No project can name a
// directory of another, hedge's own files, a root itself, or a directory whose name
// a Hive-partitioned reader takes for a column (team_id=1): a reader of one project's
// directory reads that project's rows only.
func TestParquetExportsStayInTheirProject(t *testing.T) {
	root := t.TempDir()
	env := newExportEnvWith(t, func(c *batchexport.Config) { c.Policy.ParquetRoots = []string{root} })
	intruder := env.createProject(t, "Intruder")
	owner := env.team
	ownDir := filepath.Join(env.dataDir, "exports", fmt.Sprint(owner), "exports-a")
	ownerExport := env.createExport(t, "events", parquetDestination("exports-a"))

	for _, path := range []string{
		fmt.Sprintf("exports-a/team_id=%d", owner), fmt.Sprintf("team_id=%d", owner), "x/date=2026-01-01", "a=b",
		"../exports-a", "x/../../exports-a", "..",
		env.dataDir, filepath.Join(env.dataDir, "staging"), filepath.Join(env.dataDir, "exports"),
		filepath.Join(env.dataDir, "exports", fmt.Sprint(owner)), filepath.Join(env.dataDir, "exports", fmt.Sprint(owner), "exports-a"),
		filepath.Join(env.dataDir, "exports", fmt.Sprint(intruder), fmt.Sprintf("team_id=%d", owner)),
		root, filepath.Join(root, fmt.Sprint(owner)), filepath.Join(root, fmt.Sprint(owner), "x"), filepath.Join(root, "shared"),
		filepath.Join(root, fmt.Sprint(intruder), fmt.Sprintf("team_id=%d", owner)), filepath.Join(root, fmt.Sprint(intruder), "..", fmt.Sprint(owner)),
	} {
		var out map[string]any
		status := env.call(t, "POST", fmt.Sprintf("/api/projects/%d/batch_exports/", intruder),
			fmt.Sprintf(`{"name": "intruder", "interval": "every 5 minutes", "destination": %s}`, parquetDestination(path)), &out)
		if status != 400 || out["attr"] != "destination__config" {
			t.Errorf("project %d may write to %s: %d %v", intruder, path, status, out)
		}
	}

	// What the intruder may name: its own directories, the same relative path included.
	sameName := env.createExportIn(t, intruder, "events", parquetDestination("exports-a"))
	underRoot := env.createExportIn(t, intruder, "events", parquetDestination(filepath.Join(root, fmt.Sprint(intruder), "nightly")))
	absolute := env.createExportIn(t, intruder, "events", parquetDestination(filepath.Join(env.dataDir, "exports", fmt.Sprint(intruder), "abs")))
	own := env.ingest(t, env.at(time.Minute), testEvent{"$pageview", "u1", env.at(time.Minute), "", ""})
	theirs := env.ingestFor(t, intruder, env.at(time.Minute), testEvent{"$pageview", "x1", env.at(time.Minute), "", ""})
	for _, export := range []string{ownerExport, sameName, underRoot, absolute} {
		env.settle(t, export, env.at(6*time.Minute), completed(1))
	}
	for _, c := range []struct {
		dir  string
		team int64
		want []string
	}{
		{ownDir, owner, own},
		{filepath.Join(env.dataDir, "exports", fmt.Sprint(intruder), "exports-a"), intruder, theirs},
		{filepath.Join(root, fmt.Sprint(intruder), "nightly"), intruder, theirs},
		{filepath.Join(env.dataDir, "exports", fmt.Sprint(intruder), "abs"), intruder, theirs},
	} {
		var got []string
		for _, e := range readEventsWithDuckDB(t, c.dir) {
			got = append(got, e.uuid)
			if e.team != fmt.Sprint(c.team) {
				t.Errorf("%s: a row of team_id %s, want %d only", c.dir, e.team, c.team)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s holds %v, want %v", c.dir, got, c.want)
		}
	}
}

// A symbolic link cannot carry a project's files out of its directory: the run fails,
// and says so in the terms of the export's path.
func TestParquetExportFollowsNoLinkOut(t *testing.T) {
	root := t.TempDir()
	env := newExportEnvWith(t, func(c *batchexport.Config) { c.Policy.ParquetRoots = []string{root} })
	intruder := env.createProject(t, "Intruder")
	ownerDir := filepath.Join(env.dataDir, "exports", fmt.Sprint(env.team), "exports-a")
	intruderDir := filepath.Join(env.dataDir, "exports", fmt.Sprint(intruder))
	for _, dir := range []string{ownerDir, intruderDir, filepath.Join(root, fmt.Sprint(env.team))} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Links that someone with a shell on the server left: one in the intruder's
	// directory, one standing for the intruder's directory of the root.
	if err := os.Symlink(ownerDir, filepath.Join(intruderDir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, fmt.Sprint(env.team)), filepath.Join(root, fmt.Sprint(intruder))); err != nil {
		t.Fatal(err)
	}
	viaLink := env.createExportIn(t, intruder, "events", parquetDestination("link/sub"))
	viaRoot := env.createExportIn(t, intruder, "events", parquetDestination(filepath.Join(root, fmt.Sprint(intruder), "x")))
	env.ingestFor(t, intruder, env.at(time.Minute), testEvent{"$pageview", "x1", env.at(time.Minute), "", ""})
	for export, path := range map[string]string{viaLink: "link/sub", viaRoot: filepath.Join(root, fmt.Sprint(intruder), "x")} {
		runs := env.settle(t, export, env.at(6*time.Minute), func(runs []runRecord) bool {
			return len(runs) == 1 && runs[0].Status == "FailedRetryable"
		})
		want := fmt.Sprintf("cannot write the Parquet files to %s: ", path)
		if got := *runs[0].LatestError; !strings.HasPrefix(got, want) || !strings.Contains(got, "symbolic link") {
			t.Errorf("latest_error %q, want %q... about a symbolic link", got, want)
		}
	}
	for _, dir := range []string{ownerDir, filepath.Join(root, fmt.Sprint(env.team))} {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
			t.Errorf("%s holds %v (%v), want nothing", dir, entries, err)
		}
	}
}

// An export stored before these rules, whose path they refuse, fails its runs with
// the rule in its error, until its path is changed.
func TestStoredParquetPathNowRefused(t *testing.T) {
	env := newExportEnv(t)
	for i, path := range []string{"a=b", env.dataDir} {
		e := batchexport.Export{TeamID: env.team, Name: "old", Model: "events", DestinationType: batchexport.Parquet,
			Config: map[string]any{"path": path}, Interval: "every 5 minutes"}
		if err := env.runner.Create(context.Background(), &e); err != nil {
			t.Fatal(err)
		}
		export := fmt.Sprintf("/api/projects/%d/batch_exports/%s/", env.team, e.ID)
		got := env.failedRun(t, export, env.at(time.Duration(6+5*i)*time.Minute)) // each created when the last settled
		if !strings.HasPrefix(got, fmt.Sprintf("The Parquet path %q", path)) {
			t.Errorf("%s: latest_error %q", path, got)
		}
	}
}

// failedRun settles the export's one run as FailedRetryable at the clock's time now
// and returns its latest_error.
func (env *exportEnv) failedRun(t *testing.T, export string, now time.Time) string {
	t.Helper()
	runs := env.settle(t, export, now, func(runs []runRecord) bool {
		return len(runs) == 1 && runs[0].Status == "FailedRetryable"
	})
	return *runs[0].LatestError
}

// A run's error tells the project's members what failed in the terms of their
// export, never the server's paths: those are in the log.
func TestRunErrorsKeepServerPathsOut(t *testing.T) {
	env := newExportEnv(t)
	env.ingest(t, env.at(time.Minute), testEvent{"$pageview", "u1", env.at(time.Minute), "", ""})
	// A file where hedge's exports directory should be: no Parquet destination can
	// create its directory.
	if err := os.WriteFile(filepath.Join(env.dataDir, "exports"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	blocked := env.createExport(t, "events", parquetDestination("exports/x"))
	if got, want := env.failedRun(t, blocked, env.at(6*time.Minute)), "cannot write the Parquet files to exports/x: not a directory"; got != want {
		t.Errorf("latest_error %q, want %q", got, want)
	}
	if err := os.Remove(filepath.Join(env.dataDir, "exports")); err != nil {
		t.Fatal(err)
	}

	// The warehouse's staging directory gone wrong: an error of hedge itself, which the
	// project's members can do nothing about.
	staging := env.wh.StagingDir()
	if err := os.RemoveAll(staging); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(staging, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	internal := env.createExport(t, "events", parquetDestination("fine")) // first window: 5-10
	got := env.failedRun(t, internal, env.at(11*time.Minute))
	if !strings.HasPrefix(got, "hedge could not export this window") || strings.Contains(got, "/") {
		t.Errorf("latest_error %q, want hedge's own failure without its paths", got)
	}
	if err := os.Remove(staging); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(staging, 0o700); err != nil {
		t.Fatal(err)
	}
}

// The operator's export roots are absolute, outside hedge's data directory, and none
// lies in a project's directory of another, where that project could write into it.
func TestExportRootsValidate(t *testing.T) {
	f := func(roots []string, ok bool) {
		t.Helper()
		err := batchexport.Policy{DataDir: "/srv/hedge", ParquetRoots: roots}.Validate()
		if ok != (err == nil) {
			t.Errorf("roots %v: %v, want ok=%t", roots, err, ok)
		}
	}
	f(nil, true)
	f([]string{"/mnt/exports"}, true)
	f([]string{"/srv"}, true)                    // the data directory is in no project's directory of it
	f([]string{"/mnt/a", "/mnt/a/shared"}, true) // not a project's directory
	f([]string{"relative"}, false)
	f([]string{"/srv/hedge"}, false)
	f([]string{"/srv/hedge/staging"}, false)
	f([]string{"/srv/hedge/exports/3"}, false)
	f([]string{"/mnt/a", "/mnt/a/3/x"}, false)
	f([]string{"/mnt/a", "/mnt/a/"}, false)
	f([]string{"/srv/2"}, true)
	if err := (batchexport.Policy{DataDir: "/srv/2/hedge", ParquetRoots: []string{"/srv"}}).Validate(); err == nil {
		t.Error("a data directory inside project 2's directory of a root is accepted")
	}
}

// An upload's failure is told by what the endpoint named in the export answered or
// why it could not be reached: its S3 error code and status, never the rest of a
// response (with private endpoints allowed, the endpoint may be any service of
// hedge's network), the addresses its name resolved to, or hedge's DNS server.
func TestS3ErrorsInTheExportsTerms(t *testing.T) {
	s3 := startS3(t) // no bucket: NoSuchBucket
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "SECRET-INTERNAL-PAGE", http.StatusInternalServerError)
	}))
	defer service.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closedPort, _ := net.SplitHostPort(closed.Addr().String())
	closed.Close()
	resolver := startDNS(t, map[string][]string{"closed.hedge.test": {"127.0.0.1"}})
	env := newExportEnvWith(t, func(c *batchexport.Config) { c.Policy.Resolver = resolver })
	env.ingest(t, env.at(time.Minute), testEvent{"$pageview", "u1", env.at(time.Minute), "", ""})
	object := fmt.Sprintf("team_id=%d/date=%s/", env.team, env.at(time.Minute).Format(time.DateOnly))
	cases := []struct{ endpoint, want, export string }{
		{"http://" + s3.Addr, "the endpoint answered NoSuchBucket (HTTP 404)", ""},
		{service.URL, "the endpoint answered HTTP 500 Internal Server Error", ""},
		{"http://closed.hedge.test:" + closedPort, "cannot connect to the endpoint closed.hedge.test:" + closedPort + ": connection refused", ""},
		{"http://missing.hedge.test:" + closedPort, "cannot find the endpoint's host missing.hedge.test", ""},
	}
	for i, c := range cases {
		cases[i].export = env.createExport(t, "events", fmt.Sprintf(`{"type": "S3", "config": {"bucket_name": "hedge-missing", "region": "us-east-1",
			"endpoint_url": %q, "aws_access_key_id": %q, "aws_secret_access_key": %q}}`, c.endpoint, s3AccessKey, s3SecretKey))
	}
	for _, c := range cases {
		got := env.failedRun(t, c.export, env.at(6*time.Minute))
		prefix := "cannot upload to s3://hedge-missing/" + object
		if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, ": "+c.want) {
			t.Errorf("%s: latest_error %q, want %q...: %q", c.endpoint, got, prefix, c.want)
		}
		for _, leak := range []string{"SECRET", "lookup", "dial", "Put ", " on "} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: latest_error %q tells %q", c.endpoint, got, leak)
			}
		}
		if !strings.Contains(c.endpoint, "127.0.0.1") && strings.Contains(got, "127.0.0.1") {
			t.Errorf("%s: latest_error %q tells the address its name resolved to", c.endpoint, got)
		}
	}
}
