package main

import (
	"errors"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// retryingListener keeps a listener serving through accept errors that pass: out of
// file descriptors (EMFILE, ENFILE; the soft limit is already the hard one, which Go's
// runtime raises it to at start), out of buffers or memory, a connection aborted
// before it was accepted. Those are waited out, with a backoff from 5 ms to 1 s, and
// counted; returned to the server, they would stop the listener for good. Any other
// error (the listener was closed, or really broke) is returned.
type retryingListener struct {
	net.Listener
	log    *slog.Logger
	errors *metrics.Counter
}

func newRetryingListener(ln net.Listener, name string, log *slog.Logger) *retryingListener {
	return &retryingListener{Listener: ln, log: log,
		errors: metrics.GetOrCreateCounter(`hedge_accept_errors_total{listener="` + name + `"}`)}
}

func (l *retryingListener) Accept() (net.Conn, error) {
	wait := 5 * time.Millisecond
	for {
		conn, err := l.Listener.Accept()
		if err == nil || !passingAcceptError(err) {
			return conn, err
		}
		l.errors.Inc()
		l.log.Warn("cannot accept a connection; retrying", "listener", l.Addr().String(), "err", err, "wait", wait)
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// passingAcceptError reports an accept error that goes away by itself.
func passingAcceptError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}
