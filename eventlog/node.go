package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
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
	Logger    *slog.Logger
}

// Node is an embedded JetStream node and the client connection hedge uses to it,
// in process. It lives from Open to Close; Publisher and Consumer use it meanwhile.
type Node struct {
	cfg    Config
	server *server.Server
	conn   *nats.Conn
	js     jetstream.JetStream
	log    *slog.Logger
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
		JetStreamMaxStore:  cfg.MaxBytes + cfg.MaxBytes/8, // the streams' bounds, plus their overhead
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("cannot start the log: %w", err)
	}
	srv.SetLoggerV2(serverLogger{cfg.Logger}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("cannot start the log: not ready after 30 s")
	}
	n := &Node{cfg: cfg, server: srv, log: cfg.Logger}
	if err := n.connect(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Node) connect(ctx context.Context) error {
	conn, err := nats.Connect("", nats.InProcessServer(n.server), nats.Name("hedge"),
		nats.MaxReconnects(-1), nats.NoCallbacksAfterClientClose())
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
	existing := 0
	names := n.js.StreamNames(ctx)
	for name := range names.Name() {
		if len(name) > 3 && name[:3] == "EV_" {
			existing++
		}
	}
	if err := names.Err(); err != nil {
		return fmt.Errorf("cannot list the log's streams: %w", err)
	}
	if existing != 0 && existing != n.cfg.Partitions {
		return fmt.Errorf("the log in %s has %d partitions, not %d: the count is fixed when the log is created", n.cfg.Dir, existing, n.cfg.Partitions)
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
		MaxBytes: n.cfg.MaxBytes / 8, MaxAge: n.cfg.MaxAge, Replicas: 1,
	})
	if err != nil {
		return fmt.Errorf("cannot create the log's dead letters: %w", err)
	}
	return nil
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
		Replicas:   1,
	}
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

// serverLogger sends the NATS server's notices to hedge's log: warnings and errors
// only, as the rest is the server's chatter about its own start.
type serverLogger struct{ log *slog.Logger }

func (l serverLogger) Noticef(string, ...any) {}
func (l serverLogger) Warnf(format string, v ...any) {
	l.log.Warn("log: " + fmt.Sprintf(format, v...))
}
func (l serverLogger) Fatalf(format string, v ...any) {
	l.log.Error("log: " + fmt.Sprintf(format, v...))
}
func (l serverLogger) Errorf(format string, v ...any) {
	l.log.Error("log: " + fmt.Sprintf(format, v...))
}
func (l serverLogger) Debugf(string, ...any) {}
func (l serverLogger) Tracef(string, ...any) {}
