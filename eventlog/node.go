package eventlog

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hedge-analytics/hedge/warehouse"
)

// Defaults of Config.
const (
	// DefaultPartitions is the partition count of a new log. It is fixed when the log
	// is created, as a Kafka topic's partition count is: a person's partition must not
	// change while their events are in the log. Each partition's stream caches the
	// blocks it writes and reads (8 MB each): on one node 4 took 103-120k events/s
	// through /batch/ at a peak RSS of 1.2-1.4 GB, where 8 took 108k at 2.0-2.3 GB
	// (two cores, the warehouse behind).
	DefaultPartitions = 4
	// DefaultMaxBytes bounds the log's disk, all partitions together.
	DefaultMaxBytes = 8 << 30
	// DefaultMaxAge bounds how long an event waits in the log for the warehouse.
	DefaultMaxAge = 7 * 24 * time.Hour
	// duplicateWindow is how long the streams remember a Nats-Msg-Id: longer than any
	// request's publishing, which re-sends within Publisher's deadline.
	duplicateWindow = 2 * time.Minute
	// maxPayload is the node's largest message: one event, which the edge bounds to
	// less, always fits; messages are cut at MessageBytes.
	maxPayload = 8 << 20
)

// Config configures a Node.
type Config struct {
	// Dir holds the node's files (JetStream's store).
	Dir string
	// Partitions is the partition count of a new log (default DefaultPartitions); a log
	// created with another count refuses to open with this one.
	Partitions int
	// MaxBytes and MaxAge bound the log (defaults DefaultMaxBytes, DefaultMaxAge): a
	// partition holds at most MaxBytes/Partitions, and a full one refuses publishes.
	MaxBytes int64
	MaxAge   time.Duration
	// Positions are the warehouse's (warehouse.Warehouse.LogPositions): a partition
	// whose stream is made anew, the log's directory having been removed, numbers its
	// messages after them, so that the Consumer, which reads after them, reads its
	// new messages rather than waiting for their sequence numbers to pass the old ones.
	Positions map[int]uint64
	// Cluster makes the node one of a JetStream cluster; nil: a node alone, which
	// listens on nothing (the process connects to it in process).
	Cluster *Cluster
	// EdgeOnly is a node whose process holds no warehouse: it makes no streams (the
	// warehouse node does, numbered after its positions), waits for them, and takes
	// their partition count rather than Partitions.
	EdgeOnly bool
	Logger   *slog.Logger
}

// Cluster is a node's place in a JetStream cluster: every node routes to the others,
// and each stream is replicated on Replicas of them, so an acknowledged message is on
// a quorum's disks.
type Cluster struct {
	// Name is the node's name, unique in the cluster and the same at every start:
	// JetStream knows its peers by it.
	Name string
	// Listen is the host:port the node takes its peers' routes on.
	Listen string
	// Routes are the host:port of every node's Listen (this one's may be among them).
	Routes []string
	// Replicas of each stream (default 3).
	Replicas int
	// Secret, shared by the nodes, authenticates their routes; "" leaves them
	// unauthenticated (anyone who reaches Listen could join), which Open logs.
	Secret string
}

// clusterName names hedge's JetStream clusters; a node routes only to its own.
const clusterName = "hedge"

// Node is an embedded JetStream node and the client connection hedge uses to it,
// in process. It lives from Open to Close; Publisher and Consumer use it meanwhile.
type Node struct {
	cfg    Config
	server *server.Server
	conn   *nats.Conn
	js     jetstream.JetStream
	// directory is the key-value bucket where the warehouse node tells the edge-only
	// nodes what they need of it (directory.go).
	directory jetstream.KeyValue
	// shared is the tokens ShareTokens last wrote to the directory.
	sharedMu sync.Mutex
	shared   map[string]int64
	log      *slog.Logger
}

// Open starts the node on cfg.Dir and makes or checks the partitions' streams.
func Open(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Partitions <= 0 {
		cfg.Partitions = DefaultPartitions
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Cluster != nil && cfg.Cluster.Replicas <= 0 {
		cfg.Cluster.Replicas = 3
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the log directory: %w", err)
	}
	opts := &server.Options{
		ServerName: "hedge",
		DontListen: true, // one node: clients connect in process only
		NoSigs:     true,
		JetStream:  true,
		StoreDir:   cfg.Dir,
		// fsync before every acknowledgement: with the default, lazy fsync an
		// acknowledged message can be lost on power loss.
		SyncAlways:         true,
		MaxPayload:         maxPayload,
		JetStreamMaxMemory: 64 << 20,
		// The streams' bounds (the partitions', the dead letters' eighth), the
		// directory's, and the dead letters' eighth again for the files' overhead.
		JetStreamMaxStore: cfg.MaxBytes + cfg.MaxBytes/4 + directoryMaxBytes,
	}
	var token string
	if c := cfg.Cluster; c != nil {
		if err := clusterOptions(opts, c); err != nil {
			return nil, err
		}
		// Routing starts only once the client listener is up, so a node of a cluster
		// listens for clients: on loopback, on a port of the system's choosing, and
		// only for this process, which alone knows the token.
		opts.DontListen, opts.Host, opts.Port = false, "127.0.0.1", server.RANDOM_PORT
		token = rand.Text()
		opts.Authorization = token
		if c.Secret == "" {
			cfg.Logger.Warn("the log's cluster routes are not authenticated: set --log-cluster-secret on every node")
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("cannot start the log: %w", err)
	}
	srv.SetLoggerV2(newServerLogger(cfg.Logger), false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("cannot start the log: not ready after 30 s")
	}
	n := &Node{cfg: cfg, server: srv, log: cfg.Logger}
	if err := n.connect(ctx, token); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// clusterOptions sets the options of a node of cluster c.
func clusterOptions(opts *server.Options, c *Cluster) error {
	if c.Name == "" {
		return errors.New("a node of a cluster needs a name")
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("cannot read the log's cluster address %q: %w", c.Listen, err)
	}
	opts.ServerName = c.Name
	opts.Cluster.Name = clusterName
	opts.Cluster.Host = host
	if opts.Cluster.Port, err = strconv.Atoi(port); err != nil {
		return fmt.Errorf("cannot read the log's cluster address %q: %w", c.Listen, err)
	}
	if c.Secret != "" {
		opts.Cluster.Username, opts.Cluster.Password = clusterName, c.Secret
	}
	for _, r := range c.Routes {
		u, err := url.Parse("nats://" + r)
		if err != nil || u.Port() == "" {
			return fmt.Errorf("cannot read the log's route %q: want host:port", r)
		}
		if c.Secret != "" {
			u.User = url.UserPassword(clusterName, c.Secret)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// connect connects in process, with token when the node requires one.
func (n *Node) connect(ctx context.Context, token string) error {
	options := []nats.Option{nats.InProcessServer(n.server), nats.Name("hedge"),
		nats.MaxReconnects(-1), nats.NoCallbacksAfterClientClose()}
	if token != "" {
		options = append(options, nats.Token(token))
	}
	conn, err := nats.Connect("", options...)
	if err != nil {
		return fmt.Errorf("cannot connect to the log: %w", err)
	}
	n.conn = conn
	// Without an async timeout a publish whose acknowledgement was lost would hold its
	// slot for ever, and the publisher would stall once all slots were held.
	n.js, err = jetstream.New(conn, jetstream.WithPublishAsyncTimeout(publishTimeout),
		jetstream.WithPublishAsyncMaxPending(maxPendingPublishes))
	if err != nil {
		return fmt.Errorf("cannot connect to the log: %w", err)
	}
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	if n.cfg.EdgeOnly {
		return n.waitStreams(ctx)
	}
	if n.cfg.Cluster == nil {
		return n.makeStreams(ctx)
	}
	// A node that rejoins its cluster answers before its peers have caught it up, and
	// JetStream's calls time out meanwhile.
	return n.retry(ctx, "the log's streams", func() error { return n.makeStreams(ctx) })
}

// makeStreams makes the partitions' streams, the dead letters and the directory, or
// updates them to the node's bounds.
func (n *Node) makeStreams(ctx context.Context) error {
	existing, err := n.partitionCount(ctx)
	if err != nil {
		return err
	}
	if existing != 0 && existing != n.cfg.Partitions {
		return permanent{fmt.Errorf("the log in %s has %d partitions, not %d: the count is fixed when the log is created", n.cfg.Dir, existing, n.cfg.Partitions)}
	}
	for p := range n.cfg.Partitions {
		cfg := n.streamConfig(p)
		_, err := n.js.UpdateStream(ctx, cfg)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			for lane := range laneCount {
				cfg.FirstSeq = max(cfg.FirstSeq, n.cfg.Positions[position(p, warehouse.Lane(lane))]+1)
			}
			_, err = n.js.CreateStream(ctx, cfg)
		}
		if err != nil {
			return fmt.Errorf("cannot create the log's partition %d: %w", p, err)
		}
	}
	_, err = n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: deadLetterStream, Subjects: []string{"dead.>"}, Storage: jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld,
		MaxBytes: n.cfg.MaxBytes / 8, MaxAge: n.cfg.MaxAge, Replicas: n.replicas(),
	})
	if err != nil {
		return fmt.Errorf("cannot create the log's dead letters: %w", err)
	}
	// The directory comes last: an edge-only node that finds it finds every stream.
	n.directory, err = n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: directoryBucket, Storage: jetstream.FileStorage, Replicas: n.replicas(), History: 1,
		MaxBytes: directoryMaxBytes,
	})
	if err != nil {
		return fmt.Errorf("cannot create the log's directory: %w", err)
	}
	return nil
}

// replicas is the replica count of each stream: 1 on a node alone.
func (n *Node) replicas() int {
	if n.cfg.Cluster == nil {
		return 1
	}
	return n.cfg.Cluster.Replicas
}

// readyStep is how often a node retries while it waits for its cluster.
const readyStep = 250 * time.Millisecond

// waitReady waits until JetStream answers: at once on a node alone; in a cluster, once
// a quorum of the nodes is up and has elected a meta leader.
func (n *Node) waitReady(ctx context.Context) error {
	return n.retry(ctx, "a quorum of the log's cluster", func() error {
		_, err := n.js.AccountInfo(ctx)
		return err
	})
}

// waitStreams waits, on an edge-only node, for the warehouse node to make the
// streams and the directory, and takes the partition count from the streams.
func (n *Node) waitStreams(ctx context.Context) error {
	err := n.retry(ctx, "the warehouse node to make the log's streams", func() (err error) {
		n.directory, err = n.js.KeyValue(ctx, directoryBucket)
		return err
	})
	if err != nil {
		return err
	}
	if n.cfg.Partitions, err = n.partitionCount(ctx); err != nil {
		return err
	}
	if n.cfg.Partitions == 0 {
		return errors.New("the log has a directory but no partitions")
	}
	return nil
}

// permanent is an error that retry does not try again.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// retry calls try until it succeeds, fails permanently or ctx ends, saying every 10 s
// what it waits for.
func (n *Node) retry(ctx context.Context, what string, try func() error) error {
	begin, said := time.Now(), time.Now()
	for {
		err := try()
		var p permanent
		if err == nil || errors.As(err, &p) {
			return err
		}
		if time.Since(said) >= 10*time.Second {
			n.log.Info("waiting for "+what, "waited", time.Since(begin).Round(time.Second), "err", err)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot open the log: waiting for %s: %w", what, err)
		case <-time.After(readyStep):
		}
	}
}

// partitionCount is the count of partition streams the log has.
func (n *Node) partitionCount(ctx context.Context) (int, error) {
	count := 0
	names := n.js.StreamNames(ctx)
	for name := range names.Name() {
		if strings.HasPrefix(name, "EV_") {
			count++
		}
	}
	if err := names.Err(); err != nil {
		return 0, fmt.Errorf("cannot list the log's streams: %w", err)
	}
	return count, nil
}

// streamConfig is partition p's stream: limits retention, so that the log is the
// Consumer's to purge as the warehouse applies it, and a full partition refuses new
// messages rather than dropping unapplied ones.
func (n *Node) streamConfig(p int) jetstream.StreamConfig {
	name := streamName(p)
	return jetstream.StreamConfig{
		Name:       name,
		Subjects:   []string{"ev." + strconv.Itoa(p) + ".*"},
		Storage:    jetstream.FileStorage,
		Retention:  jetstream.LimitsPolicy,
		Discard:    jetstream.DiscardNew,
		MaxBytes:   n.cfg.MaxBytes / int64(n.cfg.Partitions),
		MaxAge:     n.cfg.MaxAge,
		MaxMsgSize: maxPayload,
		Duplicates: duplicateWindow,
		Replicas:   n.replicas(),
	}
}

// Check returns nil while the log answers: on a cluster, while a quorum of its nodes
// is up (the meta leader answers).
func (n *Node) Check(ctx context.Context) error {
	if _, err := n.js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("the event log does not answer: %w", err)
	}
	return nil
}

// Partitions is the log's partition count.
func (n *Node) Partitions() int { return n.cfg.Partitions }

// Close closes the connection and shuts the node down; JetStream flushes its files.
func (n *Node) Close() error {
	if n.conn != nil {
		n.conn.Close()
	}
	n.server.Shutdown()
	n.server.WaitForShutdown()
	return nil
}

const deadLetterStream = "DEAD"

func streamName(p int) string { return "EV_" + strconv.Itoa(p) }

// laneTokens are the lanes' subject tokens, in warehouse.Lane order.
var laneTokens = [...]string{warehouse.LaneRealtime: "rt", warehouse.LaneHistorical: "hist", warehouse.LaneOverflow: "ovf"}

const laneCount = len(laneTokens)

func subject(p int, lane warehouse.Lane) string {
	return "ev." + strconv.Itoa(p) + "." + laneTokens[lane]
}

// position is the warehouse's key of a (partition, lane): each is read and recorded
// apart, as each has its own order.
func position(p int, lane warehouse.Lane) int { return p*laneCount + int(lane) }

// serverLogger sends the NATS server's warnings and errors to hedge's log (the rest
// is the server's chatter about its own start). In a cluster the server repeats
// itself: a peer that is down is an error every second ("Error trying to connect to
// route"), a stream without quorum a warning every few seconds. So one message (by its
// format) is logged at most once a repeatEvery, with how many were left out since.
type serverLogger struct {
	log *slog.Logger
	mu  sync.Mutex
	// last is when each format was last logged, and how many were left out since;
	// the formats are the server's constants, a bounded set.
	last map[string]*repeated
}

type repeated struct {
	at      time.Time
	skipped int
}

// repeatEvery is how often at most one message of the server is logged.
const repeatEvery = 30 * time.Second

func newServerLogger(log *slog.Logger) *serverLogger {
	return &serverLogger{log: log, last: make(map[string]*repeated)}
}

func (l *serverLogger) emit(level slog.Level, format string, v []any) {
	l.mu.Lock()
	r := l.last[format]
	now := time.Now()
	if r != nil && now.Sub(r.at) < repeatEvery {
		r.skipped++
		l.mu.Unlock()
		return
	}
	skipped := 0
	if r == nil {
		l.last[format] = &repeated{at: now}
	} else {
		skipped, r.at, r.skipped = r.skipped, now, 0
	}
	l.mu.Unlock()
	if skipped > 0 {
		l.log.Log(context.Background(), level, "log: "+fmt.Sprintf(format, v...), "repeats_left_out", skipped)
		return
	}
	l.log.Log(context.Background(), level, "log: "+fmt.Sprintf(format, v...))
}

func (l *serverLogger) Noticef(string, ...any)         {}
func (l *serverLogger) Warnf(format string, v ...any)  { l.emit(slog.LevelWarn, format, v) }
func (l *serverLogger) Fatalf(format string, v ...any) { l.emit(slog.LevelError, format, v) }
func (l *serverLogger) Errorf(format string, v ...any) { l.emit(slog.LevelError, format, v) }
func (l *serverLogger) Debugf(string, ...any)          {}
func (l *serverLogger) Tracef(string, ...any)          {}
