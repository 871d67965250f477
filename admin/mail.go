package admin

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
)

// mailTimeout bounds one SMTP session: connecting, greeting, and every message of it.
const mailTimeout = 20 * time.Second

// mailer sends e-mail through the SMTP server of --smtp-url:
//
//	smtp://[user:password@]host[:port][?from=address]   port 25 by default; STARTTLS when offered
//	smtps://[user:password@]host[:port][?from=address]  TLS from the start, port 465 by default
//
// With a user it authenticates with PLAIN, which net/smtp allows only over TLS or to
// a loopback server. from defaults to hedge@<host>.
type mailer struct {
	addr        string // host:port
	host        string
	implicitTLS bool
	auth        smtp.Auth
	from        string
}

// newMailer parses an --smtp-url; an empty one is no mailer (nil), and invites are
// then not e-mailed.
func newMailer(rawURL string) (*mailer, error) {
	if rawURL == "" {
		return nil, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("cannot use SMTP URL: %w", err)
	}
	m := &mailer{host: u.Hostname()}
	port := u.Port()
	switch u.Scheme {
	case "smtp":
		if port == "" {
			port = "25"
		}
	case "smtps":
		m.implicitTLS = true
		if port == "" {
			port = "465"
		}
	default:
		return nil, fmt.Errorf("cannot use SMTP URL with scheme %q: want smtp:// or smtps://", u.Scheme)
	}
	if m.host == "" {
		return nil, errors.New("cannot use SMTP URL without a host")
	}
	m.addr = net.JoinHostPort(m.host, port)
	if u.User != nil {
		password, _ := u.User.Password()
		m.auth = smtp.PlainAuth("", u.User.Username(), password, m.host)
	}
	m.from = u.Query().Get("from")
	if m.from == "" {
		m.from = "hedge@" + m.host
	}
	if _, err := mail.ParseAddress(m.from); err != nil {
		return nil, fmt.Errorf("cannot use SMTP URL: from address %q: %w", m.from, err)
	}
	return m, nil
}

// mailMessage is one plain-text e-mail to one recipient.
type mailMessage struct {
	to, subject, body string
}

// send delivers messages in one SMTP session. It stops at the first failure; the
// error names the recipient it failed on.
func (m *mailer) send(ctx context.Context, messages []mailMessage) error {
	if len(messages) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, mailTimeout)
	defer cancel()
	dialer := &net.Dialer{}
	var conn net.Conn
	var err error
	if m.implicitTLS {
		conn, err = (&tls.Dialer{NetDialer: dialer, Config: &tls.Config{ServerName: m.host}}).DialContext(ctx, "tcp", m.addr)
	} else {
		conn, err = dialer.DialContext(ctx, "tcp", m.addr)
	}
	if err != nil {
		return fmt.Errorf("cannot connect to SMTP server %s: %w", m.addr, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	client, err := smtp.NewClient(conn, m.host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("cannot greet SMTP server %s: %w", m.addr, err)
	}
	defer client.Close()
	if !m.implicitTLS {
		if ok, _ := client.Extension("STARTTLS"); ok {
			if err := client.StartTLS(&tls.Config{ServerName: m.host}); err != nil {
				return fmt.Errorf("cannot start TLS with SMTP server %s: %w", m.addr, err)
			}
		}
	}
	if m.auth != nil {
		if err := client.Auth(m.auth); err != nil {
			return fmt.Errorf("cannot authenticate to SMTP server %s: %w", m.addr, err)
		}
	}
	for _, msg := range messages {
		if err := m.deliver(client, msg); err != nil {
			return fmt.Errorf("cannot send mail to %s through %s: %w", msg.to, m.addr, err)
		}
	}
	return client.Quit()
}

func (m *mailer) deliver(client *smtp.Client, msg mailMessage) error {
	if err := client.Mail(m.from); err != nil {
		return err
	}
	if err := client.Rcpt(msg.to); err != nil {
		return err
	}
	w, err := client.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(m.format(msg)); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// format renders a message with its headers. Header values that are not plain ASCII
// (names of organizations and people, which could also hold line breaks) are
// RFC 2047-encoded, so they can neither break the header nor add one.
func (m *mailer) format(msg mailMessage) []byte {
	var b bytes.Buffer
	header := func(name, value string) { fmt.Fprintf(&b, "%s: %s\r\n", name, value) }
	header("From", m.from)
	header("To", msg.to)
	header("Subject", mime.QEncoding.Encode("utf-8", msg.subject))
	header("Date", time.Now().UTC().Format(time.RFC1123Z))
	header("Message-ID", "<"+uuid.NewString()+"@"+m.host+">")
	header("MIME-Version", "1.0")
	header("Content-Type", `text/plain; charset="utf-8"`)
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(strings.ReplaceAll(msg.body, "\n", "\r\n")))
	qp.Close()
	return b.Bytes()
}
