package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/batchexport"
	"github.com/hedge-analytics/hedge/edge"
	"github.com/hedge-analytics/hedge/eventlog"
	"github.com/hedge-analytics/hedge/flags"
	"github.com/hedge-analytics/hedge/warehouse"
)

// databaseFile is the DuckDB file inside the data directory.
const databaseFile = "hedge.duckdb"

// serveConfig is everything `hedge serve` can be told.
type serveConfig struct {
	dataDir         string
	adminAddr       string
	captureAddr     string
	publicURL       string
	captureURL      string
	trustedProxies  []netip.Prefix
	adminEmail      string
	smtpURL         string
	dnsServer       string
	pprof           bool
	insightCacheTTL time.Duration
	insightCacheMax int
	exportRoots     string
	exportPrivate   bool
	logLevel        slog.Level
	shutdownTimeout time.Duration
	warehouse       warehouse.Config
	edge            edge.Config
	// logMode is how events reach the warehouse: logDirect or logJetStream.
	logMode string
	// storage is where the warehouse keeps events: storageTable or storageLake.
	storage string
	// lakeS3 is the bucket of the lake's parts (--lake-s3 and its flags), nil for none.
	lakeS3         *warehouse.LakeS3
	lakeS3Endpoint string
	lakeS3Insecure bool
	lakeS3Region   string
	log            eventlog.Config
	// cluster: the node is one of a JetStream cluster (--log-cluster), and edgeOnly:
	// it holds no warehouse (--warehouse=false).
	cluster  eventlog.Cluster
	edgeOnly bool
}

// The --log modes. Direct: the edge hands events to the Writer and answers 200 once
// they are committed to DuckDB. JetStream: the edge answers 200 once the embedded log
// holds them, fsynced, and the warehouse applies the log behind it (eventlog).
const (
	logDirect    = "direct"
	logJetStream = "jetstream"
)

// defaultGoMemoryLimit is Go's soft memory limit unless GOMEMLIMIT is set (serveCommand).
const defaultGoMemoryLimit = 768 << 20

// The --storage modes. Table: events are rows of the DuckDB file's events table. Lake:
// Parquet parts under <data>/lake (warehouse/lake.go), written from the log, which a
// cluster always uses. The table stays the default of one node: the lake ingests no
// faster there yet, as its parts come through the same Writer (README, "The lake").
const (
	storageTable = "table"
	storageLake  = "lake"
	// lakeDir is the lake's directory in the data directory.
	lakeDir = "lake"
)

func serveCommand(args []string, stderr io.Writer) int {
	cfg := serveConfig{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.dataDir, "data", "./hedge-data", "data directory: the DuckDB file and bootstrap.json")
	fs.StringVar(&cfg.adminAddr, "admin-addr", "127.0.0.1:8000", "address of the management API listener")
	fs.StringVar(&cfg.captureAddr, "capture-addr", "127.0.0.1:8001", "address of the capture (ingestion) listener")
	fs.StringVar(&cfg.publicURL, "public-url", "", "scheme://host[:port] the management API is reached at, for absolute links; empty: the request's host")
	fs.StringVar(&cfg.captureURL, "capture-public-url", "", "scheme://host[:port] SDKs reach the capture listener at, shown in the console's install snippets; empty: the capture listener's address")
	fs.Func("trusted-proxies", "comma-separated addresses and CIDR prefixes of the reverse proxies in front of the management listener, whose X-Forwarded-For, -Host and -Proto are believed; empty: none, the headers are ignored", func(list string) (err error) {
		cfg.trustedProxies, err = admin.ParseTrustedProxies(list)
		return err
	})
	fs.StringVar(&cfg.adminEmail, "admin-email", "admin@localhost", "e-mail of the user that the first start creates")
	fs.StringVar(&cfg.smtpURL, "smtp-url", "", "SMTP server for invite e-mails: smtp://[user:password@]host[:port][?from=address] (STARTTLS when offered) or smtps://...; empty: invites are not e-mailed")
	fs.StringVar(&cfg.dnsServer, "dns-server", "", "DNS server (host[:port]) for the TXT lookups that verify domains; empty: the system resolver")
	fs.BoolVar(&cfg.pprof, "pprof", false, "serve Go profiles under /debug/pprof/ on the management listener, without authentication")
	fs.TextVar(&cfg.logLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a shutdown waits for in-flight requests")
	fs.IntVar(&cfg.warehouse.FlushRows, "flush-rows", warehouse.DefaultFlushRows, "events after which a group commit gathers no more requests; a group holds fewer than a row group of events unless one request alone holds more (one request's events are split across commits only by a bulk commit of a row group)")
	fs.DurationVar(&cfg.warehouse.FlushInterval, "flush-interval", 0, "how long a group commit waits for more events; 0: commit what is queued at once")
	fs.IntVar(&cfg.warehouse.MaxQueuedRows, "max-queued-events", warehouse.DefaultMaxQueuedRows, "events (and warnings) waiting for a commit, at most; past it capture answers 503")
	fs.DurationVar(&cfg.warehouse.DedupWindow, "dedup-window", warehouse.DefaultDedupWindow, "how long after its commit an event's uuid is remembered: a retried event with it is answered 200 and not stored again")
	fs.IntVar(&cfg.warehouse.DedupEvents, "dedup-events", warehouse.DefaultDedupEvents, "uuids remembered for --dedup-window, at most, all projects together (23 bytes each); past it the project holding the most forgets its oldest, and its window shrinks")
	fs.DurationVar(&cfg.warehouse.CheckpointInterval, "checkpoint-interval", warehouse.DefaultCheckpointInterval, fmt.Sprintf("how long at most events wait in DuckDB's WAL before a checkpoint writes them into the database file (each full row group of %d events is checkpointed at once)", warehouse.RowGroupRows))
	fs.DurationVar(&cfg.warehouse.SquashInterval, "squash-interval", warehouse.DefaultSquashInterval, "how often at most the writer folds the person overrides that merges leave into the events, so that queries of persons join an empty table")
	fs.StringVar(&cfg.exportRoots, "export-roots", "", "comma-separated absolute directories, besides <data>/exports, that Parquet batch exports may write under: project N's below <root>/N")
	fs.BoolVar(&cfg.exportPrivate, "export-allow-private-endpoints", false, "let S3 batch exports upload to addresses that are not public: loopback, private, shared (CGNAT), link-local... (a MinIO beside hedge); off, exports reach only public addresses, directly rather than through HTTP(S)_PROXY")
	fs.DurationVar(&cfg.insightCacheTTL, "insight-cache-ttl", admin.DefaultInsightCacheTTL, "how long an insight's computed result is served while its project has no new events")
	fs.IntVar(&cfg.insightCacheMax, "insight-cache-bytes", admin.DefaultInsightCacheBytes, "bytes of computed insight results kept, at most: a quarter of it per project, and no result over a sixteenth")
	fs.DurationVar(&cfg.warehouse.Query.Timeout, "query-timeout", warehouse.DefaultQueryTimeout, "how long a query of the query API may run")
	fs.IntVar(&cfg.warehouse.Query.MaxRows, "query-max-rows", warehouse.DefaultQueryMaxRows, "how many rows a HogQL query with a LIMIT may return (without one it answers 100)")
	fs.IntVar(&cfg.warehouse.Query.MaxBytes, "query-max-bytes", warehouse.DefaultQueryMaxBytes, "about how many bytes of values a query's answer may hold, and a funnel's state; past it the answer is 400 (a funnel's rows past it are read sorted by DuckDB rather than grouped)")
	fs.IntVar(&cfg.warehouse.DistinctIDCacheSize, "distinct-id-cache-size", warehouse.DefaultDistinctIDCacheSize, "distinct ids whose person is kept in memory (about 230 bytes each); the others are read from the database as events and flag requests name them")
	fs.StringVar(&cfg.warehouse.MemoryLimit, "duckdb-memory-limit", warehouse.DefaultMemoryLimit, "DuckDB's memory_limit; its resident memory runs about 450 MB above it under full ingest load, and large queries run faster with more")
	fs.Int64Var(&cfg.edge.MaxInflightBytes, "max-inflight-bytes", edge.DefaultMaxInflightBytes, "bytes of request bodies and decompressed payloads held at once, at most; past it capture answers 503")
	fs.IntVar(&cfg.edge.MaxConnsPerIP, "max-conns-per-ip", edge.DefaultMaxConnsPerIP, "connections one client address may hold open on the capture listener; behind a proxy, which every client shares the address of, raise it")
	fs.Float64Var(&cfg.edge.OverflowRate, "overflow-rate", edge.DefaultOverflowRate, "events a second one distinct_id of a project may send before its events go to the overflow lane; 0: no overflow lane")
	fs.Float64Var(&cfg.edge.OverflowBurst, "overflow-burst", edge.DefaultOverflowBurst, "events one distinct_id may send at once before the overflow rate applies")
	fs.Func("log", "how events reach the warehouse: jetstream, the default (a 200 means fsynced in the embedded NATS JetStream log under <data>/log, which the warehouse applies behind it, exactly once), or direct (a 200 means committed to DuckDB, and the event is queryable)", func(mode string) error {
		if mode != logDirect && mode != logJetStream {
			return fmt.Errorf("want %s or %s", logDirect, logJetStream)
		}
		cfg.logMode = mode
		return nil
	})
	fs.Func("storage", "where events live: table (rows of the DuckDB file) or lake (Parquet files under <data>/lake, a part per project and day of each commit, merged in the background, which any engine reads; needs --log jetstream; a cluster always uses it); default table, or lake on a cluster", func(mode string) error {
		if mode != storageTable && mode != storageLake {
			return fmt.Errorf("want %s or %s", storageTable, storageLake)
		}
		cfg.storage = mode
		return nil
	})
	fs.Func("lake-s3", "s3://bucket/prefix that keeps the lake's parts (--storage lake), <data>/lake then a cache of them; the credentials come from HEDGE_LAKE_S3_ACCESS_KEY_ID and HEDGE_LAKE_S3_SECRET_ACCESS_KEY (else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", func(v string) error {
		u, err := url.Parse(v)
		if err != nil || u.Scheme != "s3" || u.Host == "" {
			return errors.New("want s3://bucket or s3://bucket/prefix")
		}
		cfg.lakeS3 = &warehouse.LakeS3{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
		return nil
	})
	fs.StringVar(&cfg.lakeS3Endpoint, "lake-s3-endpoint", "", "host[:port] of the S3-compatible server of --lake-s3 (MinIO, versitygw, AWS: s3.<region>.amazonaws.com)")
	fs.BoolVar(&cfg.lakeS3Insecure, "lake-s3-insecure", false, "speak HTTP, not HTTPS, to --lake-s3-endpoint (a server on loopback or a private network)")
	fs.StringVar(&cfg.lakeS3Region, "lake-s3-region", "us-east-1", "the region of the --lake-s3 bucket")
	fs.Int64Var(&cfg.warehouse.Lake.CacheBytes, "lake-cache-bytes", warehouse.DefaultLakeCacheBytes, "bytes of parts <data>/lake keeps as a cache of --lake-s3, the parts used longest ago removed past it (those the queries of the last query time limit read stay)")
	fs.IntVar(&cfg.log.Partitions, "log-partitions", eventlog.DefaultPartitions, "partitions of a new log (--log jetstream), by hash of project and distinct_id; fixed once the log exists")
	fs.Int64Var(&cfg.log.MaxBytes, "log-max-bytes", eventlog.DefaultMaxBytes, "bytes the log may hold (--log jetstream), all partitions together; when the warehouse falls that far behind, capture answers 503")
	fs.DurationVar(&cfg.log.MaxAge, "log-max-age", eventlog.DefaultMaxAge, "how long an event may wait in the log for the warehouse (--log jetstream)")
	fs.StringVar(&cfg.cluster.Listen, "log-cluster", "", "host:port this node takes its log cluster peers' routes on; set, the node is one of a JetStream cluster (implies --log jetstream) whose streams are replicated on --log-replicas nodes")
	fs.Func("log-routes", "comma-separated host:port of every node's --log-cluster address (this node's may be among them)", func(list string) error {
		for _, r := range strings.Split(list, ",") {
			if r = strings.TrimSpace(r); r != "" {
				cfg.cluster.Routes = append(cfg.cluster.Routes, r)
			}
		}
		return nil
	})
	fs.IntVar(&cfg.cluster.Replicas, "log-replicas", 3, "replicas of each of the log's streams in a cluster: a 200 means a majority of them hold the events")
	fs.StringVar(&cfg.cluster.Name, "node-name", "", "this node's name in the log cluster, unique and the same at every start (default: the host name and the --log-cluster port)")
	fs.StringVar(&cfg.cluster.Secret, "log-cluster-secret", "", "secret shared by the cluster's nodes, which authenticates their routes (set it in the environment, HEDGE_LOG_CLUSTER_SECRET, to keep it out of the process list); empty: routes are not authenticated")
	warehouseNode := fs.Bool("warehouse", true, "this node holds the warehouse: the DuckDB file, the management API and console, and the log's consumer; in a cluster exactly one node does, the others (--warehouse=false) run an edge that publishes into the log and forwards the flag routes to it")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "hedge serve:", err)
		return 2
	}
	cfg.edgeOnly = !*warehouseNode
	if err := cfg.checkModes(); err != nil {
		fmt.Fprintln(stderr, "hedge serve:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	// The writer's many short cgo calls into DuckDB keep their P, so with one P per
	// core the capture handlers queue behind it. Twice the runtime's default (the
	// cores, or the container's CPU limit), at least 4, cut /capture/'s p99 at 25k
	// req/s from 60 ms to 24-29 ms on 2 cores (bench, capture-25k) and raised its
	// closed-loop rate by 7-20%. GOMAXPROCS in the environment wins.
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(max(4, 2*runtime.GOMAXPROCS(0)))
	}
	// The log's JetStream node keeps the blocks it wrote, purged or read within the
	// last 10 s in memory (8 MB each), which Go's collector, pacing by GOGC alone, lets
	// double before it collects. A soft limit on Go's memory (DuckDB's is
	// --duckdb-memory-limit) bounds it; measured through the log beside another
	// tenant's heavy queries (make bench, abuse-log): none, 1.29 GB of RSS and 0.89 of
	// the load alone; 768 MiB, 1.20 GB and 0.95; 640 MiB, 1.08 GB but 0.70, the
	// collector taking the CPU. GOMEMLIMIT in the environment wins.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultGoMemoryLimit)
	}

	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	s, err := start(ctx, cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	code := 0
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-s.failed:
		log.Error("listener failed", "err", err)
		code = 1 // a supervisor restarts what failed
	case <-s.invalidated():
		// Every statement fails until the file is opened again, which only a new
		// process can do: exit for the supervisor to restart hedge, which replays the
		// WAL, rather than answer 503 and 500 until someone does.
		log.Error("DuckDB has invalidated the database: exiting for a restart", "err", s.warehouse.InvalidatedBy())
		code = 1
	}
	stopSignals() // a second signal kills at once
	if err := s.stop(); err != nil {
		log.Error("unclean shutdown", "err", err)
		return 1
	}
	return code
}

// server is the running process: the warehouse and the two listeners over it.
type server struct {
	cfg       serveConfig
	log       *slog.Logger
	warehouse *warehouse.Warehouse
	api       *admin.API
	exports   *batchexport.Runner
	flags     *flags.Store // the flag definitions, which the management API edits
	capture   *edge.Server
	// eventLog, publisher and consumer run with --log jetstream: the log, the edge's
	// hand-off into it, and what applies it to the warehouse.
	eventLog  *eventlog.Node
	publisher *eventlog.Publisher
	consumer  *eventlog.Consumer
	// stopSharing ends the sharing of project tokens with the cluster (shareTokens).
	stopSharing context.CancelFunc
	adminURL    string
	captureURL  string
	// bootstrap is what this start created on an empty database, or nil.
	bootstrap *admin.Bootstrap
	// failed receives the error of a listener that stopped by itself.
	failed  chan error
	serving sync.WaitGroup
	// listeners are closed by stop once the servers have shut down: a server's
	// Shutdown that comes before its Serve has taken the listener does not know of it,
	// and that Serve would then accept for ever.
	listeners []net.Listener
}

// checkModes completes and checks the log's and the storage's flags: the log is
// direct unless set or on a cluster (--log-cluster implies jetstream), an edge-only
// node needs a cluster to publish into, and the lake a log to write from.
func (cfg *serveConfig) checkModes() error {
	if err := cfg.checkLog(); err != nil {
		return err
	}
	switch {
	case cfg.storage == "" && cfg.cluster.Listen != "":
		cfg.storage = storageLake
	case cfg.storage == "":
		cfg.storage = storageTable
	case cfg.storage == storageTable && cfg.cluster.Listen != "":
		return errors.New("--log-cluster needs --storage lake: a cluster keeps its events in the lake")
	}
	if cfg.storage == storageLake && cfg.logMode != logJetStream {
		return errors.New("--storage lake needs --log jetstream: the lake's parts are written from the log, in large groups")
	}
	return cfg.checkLakeS3()
}

// checkLakeS3 completes the lake's bucket from its flags and the environment.
func (cfg *serveConfig) checkLakeS3() error {
	if cfg.lakeS3 == nil {
		return nil
	}
	if cfg.storage != storageLake {
		return errors.New("--lake-s3 needs --storage lake")
	}
	if cfg.lakeS3Endpoint == "" {
		return errors.New("--lake-s3 needs --lake-s3-endpoint: the S3-compatible server's host[:port]")
	}
	b := cfg.lakeS3
	b.Endpoint, b.Insecure, b.Region = cfg.lakeS3Endpoint, cfg.lakeS3Insecure, cfg.lakeS3Region
	b.AccessKey = cmp.Or(os.Getenv("HEDGE_LAKE_S3_ACCESS_KEY_ID"), os.Getenv("AWS_ACCESS_KEY_ID"))
	b.SecretKey = cmp.Or(os.Getenv("HEDGE_LAKE_S3_SECRET_ACCESS_KEY"), os.Getenv("AWS_SECRET_ACCESS_KEY"))
	if b.AccessKey == "" || b.SecretKey == "" {
		return errors.New("--lake-s3 needs credentials: set HEDGE_LAKE_S3_ACCESS_KEY_ID and HEDGE_LAKE_S3_SECRET_ACCESS_KEY")
	}
	cfg.warehouse.Lake.S3 = b
	return nil
}

// checkLog completes and checks the log's flags.
func (cfg *serveConfig) checkLog() error {
	if cfg.cluster.Listen == "" {
		if cfg.edgeOnly {
			return errors.New("--warehouse=false needs --log-cluster: an edge-only node publishes into a cluster's log")
		}
		if cfg.logMode == "" {
			// One node is a cluster of one: the log's path, which a cluster takes, is the
			// default, so a 200 waits for the log's fsync alone and a burst or another
			// tenant's heavy queries slow the warehouse, not capture.
			cfg.logMode = logJetStream
		}
		return nil
	}
	if cfg.logMode == logDirect {
		return errors.New("--log-cluster needs --log jetstream")
	}
	cfg.logMode = logJetStream
	if len(cfg.cluster.Routes) == 0 {
		return errors.New("--log-cluster needs --log-routes: the nodes of the cluster")
	}
	if cfg.cluster.Name == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("cannot name the node (set --node-name): %w", err)
		}
		_, port, _ := net.SplitHostPort(cfg.cluster.Listen)
		cfg.cluster.Name = host + "-" + port
	}
	cfg.log.Cluster = &cfg.cluster
	cfg.log.EdgeOnly = cfg.edgeOnly
	return nil
}

// start opens the warehouse, bootstraps an empty one, and starts both listeners. The
// listeners bind before anything answers on them, so their addresses (port 0 in tests)
// are known to the bootstrap.
func start(ctx context.Context, cfg serveConfig, log *slog.Logger) (_ *server, err error) {
	if err := os.MkdirAll(cfg.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create data directory: %w", err)
	}
	if cfg.edgeOnly {
		return startEdgeOnly(ctx, cfg, log)
	}
	cfg.warehouse.Path = filepath.Join(cfg.dataDir, databaseFile)
	cfg.warehouse.Logger = log
	if cfg.storage == storageLake {
		cfg.warehouse.LakeDir = filepath.Join(cfg.dataDir, lakeDir)
		if cfg.warehouse.FlushRows == warehouse.DefaultFlushRows {
			cfg.warehouse.FlushRows = warehouse.DefaultLakeFlushRows
		}
	}
	s := &server{cfg: cfg, log: log, failed: make(chan error, 2)}
	begin := time.Now()
	replayed := reportReplay(cfg.warehouse.Path, replayReportInterval, log)
	s.warehouse, err = warehouse.Open(ctx, cfg.warehouse)
	replayed()
	if err != nil {
		return nil, err
	}
	log.Info("database open", "path", cfg.warehouse.Path, "took", time.Since(begin).Round(time.Millisecond))
	s.warehouse.StartBackfill()
	var adminLn, captureLn net.Listener
	defer func() {
		if err != nil {
			for _, ln := range []net.Listener{adminLn, captureLn} {
				if ln != nil {
					ln.Close()
				}
			}
			s.stopLog(nil)
			s.warehouse.Close()
		}
	}()
	if adminLn, err = net.Listen("tcp", cfg.adminAddr); err != nil {
		return nil, fmt.Errorf("cannot listen for the management API: %w", err)
	}
	if captureLn, err = net.Listen("tcp", cfg.captureAddr); err != nil {
		return nil, fmt.Errorf("cannot listen for capture: %w", err)
	}
	s.adminURL = listenerURL(adminLn)
	if cfg.publicURL != "" {
		s.adminURL = strings.TrimSuffix(cfg.publicURL, "/")
	}
	s.captureURL = listenerURL(captureLn)
	if cfg.captureURL != "" {
		s.captureURL = strings.TrimSuffix(cfg.captureURL, "/")
	}

	s.bootstrap, err = admin.BootstrapIfEmpty(ctx, s.warehouse.DB(), cfg.dataDir, admin.Bootstrap{
		UserEmail: cfg.adminEmail, AdminURL: s.adminURL, CaptureURL: s.captureURL,
	})
	if err != nil {
		return nil, err
	}
	if s.bootstrap != nil {
		log.Info("bootstrapped an organization, a project and a personal API key",
			"credentials", filepath.Join(cfg.dataDir, admin.BootstrapFile))
	}
	dataDir, err := filepath.Abs(cfg.dataDir)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve the data directory: %w", err)
	}
	policy := batchexport.Policy{DataDir: dataDir, AllowPrivateEndpoints: cfg.exportPrivate}
	for _, root := range strings.Split(cfg.exportRoots, ",") {
		if root = strings.TrimSpace(root); root != "" {
			policy.ParquetRoots = append(policy.ParquetRoots, root)
		}
	}
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	s.exports = batchexport.New(batchexport.Config{Warehouse: s.warehouse, Policy: policy, Logger: log})
	if err := s.exports.Start(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.exports.Close()
		}
	}()
	s.flags = flags.NewStore(flags.Config{DB: s.warehouse.DB(), GroupTypes: s.warehouse.GroupTypes, Logger: log})
	s.api, err = admin.New(ctx, admin.Config{Warehouse: s.warehouse, InsightCacheTTL: cfg.insightCacheTTL, InsightCacheBytes: cfg.insightCacheMax, PublicURL: cfg.publicURL, CaptureURL: s.captureURL, TrustedProxies: cfg.trustedProxies, Pprof: cfg.pprof, Logger: log,
		SMTPURL: cfg.smtpURL, DNSServer: cfg.dnsServer, Exports: s.exports, Flags: s.flags,
		Version: version, EventLog: s.eventLogStatus})
	if err != nil {
		return nil, err
	}
	edgeConfig := cfg.edge
	edgeConfig.Handoff, edgeConfig.Teams, edgeConfig.Logger = s.warehouse.Writer(), s.api.ProjectTokens().Team, log
	if cfg.logMode == logJetStream {
		if edgeConfig.Handoff, err = s.startLog(ctx); err != nil {
			return nil, err
		}
		if err = s.shareWithCluster(ctx, listenerURL(captureLn)); err != nil {
			return nil, err
		}
	}
	edgeConfig.Flags, edgeConfig.People, edgeConfig.SDKAPI = s.flags, s.warehouse, s.api.Handler()
	edgeConfig.Locations = s.api.ProjectTokens().Location
	s.capture = edge.New(edgeConfig)
	s.listeners = []net.Listener{adminLn, captureLn}
	s.serve("management API", func() error { return s.api.Serve(newRetryingListener(adminLn, "admin", log)) })
	s.serve("capture", func() error { return s.capture.Serve(newRetryingListener(captureLn, "capture", log)) })
	log.Info("serving", "admin_url", s.adminURL, "capture_url", s.captureURL)
	return s, nil
}

// startLog opens the log under <data>/log and starts applying it to the warehouse
// from the positions the warehouse recorded; it returns the edge's hand-off into it.
func (s *server) startLog(ctx context.Context) (edge.Handoff, error) {
	positions, err := s.warehouse.LogPositions(ctx)
	if err != nil {
		return nil, err
	}
	cfg := s.cfg.log
	cfg.Dir, cfg.Positions, cfg.Logger = filepath.Join(s.cfg.dataDir, "log"), positions, s.log
	if s.eventLog, err = eventlog.Open(ctx, cfg); err != nil {
		return nil, err
	}
	s.consumer = eventlog.StartConsumer(s.eventLog, s.warehouse.Writer(), positions, s.log)
	s.publisher = eventlog.NewPublisher(s.eventLog)
	s.log.Info("event log open", "dir", cfg.Dir, "partitions", s.eventLog.Partitions())
	return s.publisher, nil
}

// eventLogStatus is the instance status's view of the log: nil on the direct path.
func (s *server) eventLogStatus() *admin.EventLogStatus {
	if s.consumer == nil {
		return nil
	}
	status := &admin.EventLogStatus{Mode: "jetstream", Replicas: 1, DeadLetters: s.consumer.DeadLetters()}
	if s.cfg.log.Cluster != nil {
		status.Mode, status.Replicas = "cluster", s.cfg.log.Cluster.Replicas
	}
	for p := range s.eventLog.Partitions() {
		messages, behind := s.consumer.Backlog(p)
		status.Partitions = append(status.Partitions, admin.PartitionBacklog{Partition: p, Messages: messages, Behind: behind})
	}
	return status
}

// shareWithCluster writes to the log's directory what the edge-only nodes of a
// cluster need of the warehouse node: where its capture listener is, and the project
// tokens, now and after every change, until stopLog. (On a node alone nobody reads
// them; they cost a few writes at start.)
func (s *server) shareWithCluster(ctx context.Context, captureURL string) error {
	if err := s.eventLog.ShareWarehouse(ctx, captureURL); err != nil {
		return err
	}
	tokens := s.api.ProjectTokens()
	if err := s.eventLog.ShareTokens(ctx, tokens.Tokens()); err != nil {
		return err
	}
	sharing, stop := context.WithCancel(context.Background())
	s.stopSharing = stop
	go func() {
		for {
			select {
			case <-tokens.Changed():
			case <-sharing.Done():
				return
			}
			// A failure (no quorum) is tried again at the next change, or retried here
			// until the tokens are shared: an edge-only node refuses a token it has not
			// been told of.
			for {
				c, cancel := context.WithTimeout(sharing, 10*time.Second)
				err := s.eventLog.ShareTokens(c, tokens.Tokens())
				cancel()
				if err == nil || sharing.Err() != nil {
					break
				}
				s.log.Warn("cannot share project tokens with the cluster; retrying", "err", err)
				select {
				case <-time.After(time.Second):
				case <-sharing.Done():
					return
				}
			}
		}
	}()
	return nil
}

// stopLog lets the warehouse apply what the log holds until ctx ends (nil: not at
// all), stops applying it, then closes it; what the warehouse has not applied stays
// in it for the next start.
func (s *server) stopLog(ctx context.Context) {
	if s.stopSharing != nil {
		s.stopSharing()
	}
	if s.publisher != nil {
		s.publisher.Close()
	}
	if s.consumer != nil {
		if ctx != nil {
			begin := time.Now()
			if err := s.consumer.Drain(ctx); err != nil {
				s.log.Warn("the event log was not drained; the rest is applied at the next start", "err", err)
			} else {
				s.log.Info("event log drained", "took", time.Since(begin).Round(time.Millisecond))
			}
		}
		s.consumer.Stop()
	}
	if s.eventLog != nil {
		s.eventLog.Close()
	}
}

func (s *server) serve(name string, serve func() error) {
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		if err := serve(); err != nil {
			s.failed <- fmt.Errorf("%s: %w", name, err)
		}
	}()
}

// stop shuts down in the order that keeps every accepted event: interrupt the users'
// queries (their requests answer 503 at once, rather than hold the shutdown until
// their time limit), stop accepting and let in-flight requests finish (each waits for
// its commit, or its log's acknowledgement), stop the batch exports (a run in progress
// runs again at the next start), stop applying the log and close it (with --log
// jetstream: what is not applied waits in it), then close the warehouse, which
// commits anything still queued and checkpoints. An edge-only node has only the
// capture listener and the log.
func (s *server) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.shutdownTimeout)
	defer cancel()
	begin := time.Now()
	if s.warehouse != nil {
		s.warehouse.Queries().Stop()
		s.log.Info("queries stopped", "took", time.Since(begin).Round(time.Millisecond))
	}
	errs := make(chan error, 2)
	go func() { errs <- s.capture.Shutdown(ctx) }()
	shutdowns := 1
	if s.api != nil {
		go func() { errs <- s.api.Shutdown(ctx) }()
		shutdowns++
	}
	var err error
	for range shutdowns {
		err = errors.Join(err, <-errs)
	}
	for _, ln := range s.listeners {
		ln.Close() // closed already, unless its Serve began after its Shutdown
	}
	s.serving.Wait()
	s.log.Info("listeners stopped", "took", time.Since(begin).Round(time.Millisecond))
	if s.warehouse == nil {
		s.stopLog(ctx)
		return err
	}
	s.exports.Close()
	s.stopLog(ctx)
	return errors.Join(err, s.warehouse.Close())
}

// invalidated receives when DuckDB has invalidated the warehouse's database; never on
// an edge-only node.
func (s *server) invalidated() <-chan struct{} {
	if s.warehouse == nil {
		return nil
	}
	return s.warehouse.Invalidated()
}

// startEdgeOnly starts an edge-only node of a cluster: its log node, which waits for a
// quorum of the cluster and for the streams the warehouse node makes, the directory
// of project tokens, and the capture listener, whose events go into the log and whose
// flag routes go to the warehouse node's capture listener. It has no DuckDB file and
// no management listener (the warehouse node's serves the cluster; see README).
func startEdgeOnly(ctx context.Context, cfg serveConfig, log *slog.Logger) (_ *server, err error) {
	s := &server{cfg: cfg, log: log, failed: make(chan error, 2)}
	captureLn, err := net.Listen("tcp", cfg.captureAddr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen for capture: %w", err)
	}
	defer func() {
		if err != nil {
			captureLn.Close()
			s.stopLog(nil)
		}
	}()
	logConfig := cfg.log
	logConfig.Dir, logConfig.Logger = filepath.Join(cfg.dataDir, "log"), log
	if s.eventLog, err = eventlog.Open(ctx, logConfig); err != nil {
		return nil, err
	}
	directory, err := s.eventLog.WatchDirectory(ctx)
	if err != nil {
		return nil, err
	}
	s.publisher = eventlog.NewPublisher(s.eventLog)
	edgeConfig := cfg.edge
	edgeConfig.Handoff, edgeConfig.Teams, edgeConfig.Logger = s.publisher, directory.Team, log
	edgeConfig.Remote, edgeConfig.Health = edge.NewRemote(directory.Warehouse), s.eventLog.Check
	s.capture = edge.New(edgeConfig)
	s.captureURL = listenerURL(captureLn)
	if cfg.captureURL != "" {
		s.captureURL = strings.TrimSuffix(cfg.captureURL, "/")
	}
	s.listeners = []net.Listener{captureLn}
	s.serve("capture", func() error { return s.capture.Serve(newRetryingListener(captureLn, "capture", log)) })
	log.Info("serving as an edge-only node", "capture_url", s.captureURL, "node", cfg.cluster.Name, "partitions", s.eventLog.Partitions())
	return s, nil
}

// listenerURL is the http URL of a listener; an unspecified address (0.0.0.0, ::) is
// reached through loopback.
func listenerURL(ln net.Listener) string {
	addr := ln.Addr().(*net.TCPAddr)
	ip := addr.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
		if addr.IP.To4() == nil {
			ip = net.IPv6loopback
		}
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(ip.String(), fmt.Sprint(addr.Port))}
	return u.String()
}
