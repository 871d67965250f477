package batchexport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/hedge-analytics/hedge/warehouse"
)

// Destination types: where the Parquet files of a run go.
const (
	// Parquet writes them into a directory of this machine.
	Parquet = "Parquet"
	// S3 uploads them to a bucket of S3 or of an S3-compatible store.
	S3 = "S3"
)

// DestinationTypes are the destination types hedge exports to.
var DestinationTypes = []string{S3, Parquet}

// SecretFields are the config fields of each destination type that the API stores for
// the runner and never shows (PostHog's BatchExportDestination.secret_fields).
var SecretFields = map[string][]string{
	S3: {"aws_access_key_id", "aws_secret_access_key"},
}

// Policy is what the operator allows destinations to reach.
type Policy struct {
	// DataDir is hedge's data directory: its exports directory (ExportsDir) is the
	// export root of relative Parquet paths (parquet.go has the rules).
	DataDir string
	// ParquetRoots are further export roots, absolute: Parquet destinations of project
	// N may write below <root>/N. Validate checks them.
	ParquetRoots []string
	// AllowPrivateEndpoints lets an S3 endpoint_url name an address that is not public
	// (publicAddress), a MinIO beside hedge, say. Off, an export cannot be aimed at the
	// services of hedge's own network: neither by its endpoint_url nor by the addresses
	// its name resolves to when an upload dials them, and uploads go direct, not through
	// the environment's proxy.
	AllowPrivateEndpoints bool
	// Resolver looks up the host names of S3 endpoints; nil: the system's resolver.
	Resolver *net.Resolver
	// stagingDir is the warehouse's staging directory, where no destination writes; New
	// sets it.
	stagingDir string
}

// InvalidConfig is a destination config that a batch export cannot use. Its Detail is
// meant for the user who sent it; Code is "required" for a missing field, else
// "invalid_input".
type InvalidConfig struct{ Code, Detail string }

func (e *InvalidConfig) Error() string { return e.Detail }

func invalidf(format string, args ...any) error {
	return &InvalidConfig{Code: "invalid_input", Detail: fmt.Sprintf(format, args...)}
}

// Check validates the config of a destination of the given type of the project team,
// and normalizes it in place: PostHog's bucket_name may also be sent as bucket.
func (p Policy) Check(team int64, kind string, config map[string]any) error {
	for _, field := range []string{"include_events", "exclude_events"} {
		if _, err := stringList(config, field); err != nil {
			return err
		}
	}
	if c, ok := config["compression"]; ok && c != nil {
		name, _ := c.(string)
		if _, ok := warehouse.ParquetCompressions[name]; !ok {
			return invalidf("%q is not a valid compression: use one of zstd, snappy, gzip, brotli, lz4, none.", fmt.Sprint(c))
		}
	}
	switch kind {
	case Parquet:
		_, err := p.parquetTarget(team, config)
		return err
	case S3:
		if _, ok := config["bucket_name"]; !ok {
			if bucket, ok := config["bucket"]; ok {
				config["bucket_name"] = bucket
				delete(config, "bucket")
			}
		}
		_, err := p.s3Target(config)
		return err
	}
	return invalidf("%q is not a destination hedge exports to: use S3 or Parquet.", kind)
}

// s3Target is where an S3 destination uploads.
type s3Target struct {
	endpoint                     string // host[:port]
	host                         string // endpoint's host, without brackets or port
	secure, virtualHost          bool
	bucket, region, prefix       string
	accessKeyID, secretAccessKey string
	allowPrivate                 bool
	resolver                     *net.Resolver
}

func (p Policy) s3Target(config map[string]any) (s3Target, error) {
	t := s3Target{endpoint: "s3.amazonaws.com", secure: true, allowPrivate: p.AllowPrivateEndpoints, resolver: p.Resolver}
	var err error
	if t.bucket, err = requiredString(config, "bucket_name", "the bucket to upload to"); err != nil {
		return t, err
	}
	if err := s3utils.CheckValidBucketName(t.bucket); err != nil {
		return t, invalidf("bucket_name %q is not a bucket name S3 accepts: %s.", t.bucket, err)
	}
	if t.region, err = requiredString(config, "region", "the bucket's region"); err != nil {
		return t, err
	}
	if t.accessKeyID, err = requiredString(config, "aws_access_key_id", "the access key id to upload with"); err != nil {
		return t, err
	}
	if t.secretAccessKey, err = requiredString(config, "aws_secret_access_key", "the secret access key to upload with"); err != nil {
		return t, err
	}
	if t.prefix, err = optionalString(config, "prefix"); err != nil {
		return t, err
	}
	if format, err := optionalString(config, "file_format"); err != nil || (format != "" && format != "Parquet") {
		return t, invalidf("hedge uploads Parquet files: file_format must be \"Parquet\".")
	}
	if v, ok := config["use_virtual_style_addressing"]; ok && v != nil {
		b, ok := v.(bool)
		if !ok {
			return t, invalidf("use_virtual_style_addressing must be true or false.")
		}
		t.virtualHost = b
	}
	raw, err := optionalString(config, "endpoint_url")
	if err != nil || raw == "" {
		return t, err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
		return t, invalidf("endpoint_url %q must be http(s)://host[:port] of an S3-compatible store.", raw)
	}
	t.endpoint, t.secure = u.Host, u.Scheme == "https"
	t.host = u.Hostname()
	if !p.AllowPrivateEndpoints {
		// A name is judged by the addresses it resolves to when an upload dials them
		// (s3Transport); an address, and the names of this host, now.
		addr, err := netip.ParseAddr(t.host)
		if (err == nil && !publicAddress(addr)) || localHostName(t.host) {
			return t, invalidf("endpoint_url %q is not a public address: hedge's operator must allow private ones with --export-allow-private-endpoints.", raw)
		}
	}
	return t, nil
}

// credentialFields are the config fields, by destination type, that decide where the
// secret fields go: the stored secrets sign uploads to the endpoint they were given
// for, so an update that changes one of these must send the secrets again. Whoever
// may edit an export cannot aim its stored credentials at a server of their own.
var credentialFields = map[string][]string{S3: {"endpoint_url"}}

// MissingSecret is the first secret field (SecretFields) that an update of a
// destination of the given type must send and does not, or "": sent is the update's
// config, stored the destination's as it is. A field of credentialFields counts as
// changed when sent holds it with another value (null and "" being the same).
func MissingSecret(kind string, stored, sent map[string]any) string {
	changed := false
	for _, field := range credentialFields[kind] {
		if v, ok := sent[field]; ok && configText(v) != configText(stored[field]) {
			changed = true
		}
	}
	if !changed {
		return ""
	}
	for _, secret := range SecretFields[kind] {
		if s, ok := sent[secret].(string); !ok || strings.TrimSpace(s) == "" {
			return secret
		}
	}
	return ""
}

// configText is a config value as text to compare: "" for null.
func configText(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprintf("%T:%v", v, v)
}

func requiredString(config map[string]any, field, what string) (string, error) {
	s, err := optionalString(config, field)
	if err == nil && strings.TrimSpace(s) == "" {
		err = &InvalidConfig{Code: "required", Detail: fmt.Sprintf("The destination needs %q: %s.", field, what)}
	}
	return s, err
}

func optionalString(config map[string]any, field string) (string, error) {
	v, ok := config[field]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", invalidf("%q must be a string.", field)
	}
	return s, nil
}

func stringList(config map[string]any, field string) ([]string, error) {
	v, ok := config[field]
	if !ok || v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, invalidf("%q must be a list of event names.", field)
	}
	list := make([]string, 0, len(items))
	for _, item := range items {
		s, ok := item.(string)
		if !ok {
			return nil, invalidf("%q must be a list of event names.", field)
		}
		list = append(list, s)
	}
	return list, nil
}

// objectName is where one exported file goes, below a destination's directory or
// prefix: team_id=N/date=YYYY-MM-DD/<run id>.parquet, with -1, -2... for further files
// of the same date. The same run names the same files each time it runs, so a retry
// overwrites what an attempt left and never adds rows twice.
func objectName(team int64, runID string, files []warehouse.ExportFile, i int) string {
	n := 0
	for _, f := range files[:i] {
		if f.Date == files[i].Date {
			n++
		}
	}
	name := runID + ".parquet"
	if n > 0 {
		name = fmt.Sprintf("%s-%d.parquet", runID, n)
	}
	return fmt.Sprintf("team_id=%d/date=%s/%s", team, files[i].Date, name)
}

// deliverS3 uploads the files below the destination's prefix.
func deliverS3(ctx context.Context, t s3Target, team int64, runID string, files []warehouse.ExportFile) error {
	lookup := minio.BucketLookupPath
	if t.virtualHost {
		lookup = minio.BucketLookupDNS
	}
	client, err := minio.New(t.endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(t.accessKeyID, t.secretAccessKey, ""),
		Secure:       t.secure,
		Region:       t.region,
		BucketLookup: lookup,
		Transport:    s3Transport(t.allowPrivate, t.resolver),
		// A failed run is retried as a whole, with backoff (Runner); a few quick tries
		// here ride out a dropped connection.
		MaxRetries: 3,
	})
	if err != nil {
		return &failure{public: "cannot use the S3 endpoint " + t.endpoint, cause: err}
	}
	prefix := t.prefix
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	for i, f := range files {
		key := prefix + objectName(team, runID, files, i)
		if _, err := client.FPutObject(ctx, t.bucket, key, f.Path, minio.PutObjectOptions{ContentType: "application/vnd.apache.parquet"}); err != nil {
			return s3Failure(t, key, err)
		}
	}
	return nil
}

// notPublicError is a dial that s3Transport refused: the address is not public.
type notPublicError struct{ addr netip.Addr }

func (e *notPublicError) Error() string {
	return fmt.Sprintf("refusing to connect to %s: not a public address (see --export-allow-private-endpoints)", e.addr)
}

// s3Transport dials S3 refusing, unless allowPrivate, any address that is not public:
// checked on the address actually dialled, so a name that resolves to an address that
// is not public is refused too. resolver looks up names (nil: the system's).
func s3Transport(allowPrivate bool, resolver *net.Resolver) http.RoundTripper {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Resolver: resolver}
	proxy := http.ProxyFromEnvironment
	if !allowPrivate {
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("cannot tell the address of %s: %w", address, err)
			}
			if !publicAddress(ap.Addr()) {
				return &notPublicError{ap.Addr()}
			}
			return nil
		}
		// The check can only vouch for the addresses hedge dials itself: through a
		// proxy it would judge the proxy, which then connects wherever the name leads.
		proxy = nil
	}
	return &http.Transport{
		Proxy:                 proxy,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// s3Code is an S3 error code (NoSuchBucket, AccessDenied...): letters and digits.
var s3Code = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.]{0,63}$`)

// s3Failure is why an upload of object to the destination failed, told in the
// destination's terms: the host as its endpoint_url names it, never the addresses it
// resolved to, and one answer whether a name resolves to an address that is not public
// or to none, so that exports cannot map the names of hedge's network. What the
// endpoint answered is told by its status and S3 error code only: the rest of a
// response, which could be any service's when private endpoints are allowed, is not
// repeated. Errors of hedge itself (its staging file, say) are returned as they are.
func s3Failure(t s3Target, object string, err error) error {
	where := fmt.Sprintf("cannot upload to s3://%s/%s", t.bucket, object)
	var (
		notPublic *notPublicError
		dnsErr    *net.DNSError
		resp      minio.ErrorResponse
		certErr   *tls.CertificateVerificationError
		urlErr    *url.Error
		reason    string
	)
	switch {
	case errors.As(err, &notPublic), !t.allowPrivate && errors.As(err, &dnsErr):
		reason = fmt.Sprintf("the endpoint's host %s does not resolve to a public address", t.host)
	case errors.As(err, &dnsErr):
		reason = fmt.Sprintf("cannot find the endpoint's host %s", t.host)
	case errors.As(err, &resp) && resp.RequestID == "minio":
		// Refused by the S3 client before anything was sent, in its own words.
		reason = "the S3 client refuses the upload: " + resp.Message
	case errors.As(err, &resp) && resp.StatusCode != 0:
		reason = fmt.Sprintf("the endpoint answered HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		if s3Code.MatchString(resp.Code) {
			reason = fmt.Sprintf("the endpoint answered %s (HTTP %d)", resp.Code, resp.StatusCode)
		}
	case errors.As(err, &certErr):
		reason = fmt.Sprintf("the TLS certificate of %s is not valid for it", t.host)
	case errors.As(err, &urlErr):
		reason = "cannot connect to the endpoint " + t.endpoint
		var errno syscall.Errno
		var netErr net.Error
		if errors.As(err, &errno) {
			reason += ": " + errno.Error()
		} else if errors.As(err, &netErr) && netErr.Timeout() {
			reason += ": timed out"
		}
	default:
		return fmt.Errorf("%s: %w", where, err)
	}
	return &failure{public: where + ": " + reason, cause: err}
}

// destination is a batch export's destination as the runner reads it.
type destination struct {
	kind   string
	config map[string]any
}

// filters are the parts of a destination's config that select events.
func (d destination) filters() (include, exclude []string, err error) {
	if include, err = stringList(d.config, "include_events"); err != nil {
		return nil, nil, err
	}
	exclude, err = stringList(d.config, "exclude_events")
	return include, exclude, err
}

func (d destination) compression() string {
	c, _ := d.config["compression"].(string)
	return c
}

// deliver sends the files of a run to the destination.
func (p Policy) deliver(ctx context.Context, d destination, team int64, runID string, files []warehouse.ExportFile) error {
	if len(files) == 0 {
		return nil
	}
	switch d.kind {
	case Parquet:
		t, err := p.parquetTarget(team, d.config)
		if err != nil {
			return err
		}
		return deliverParquet(t, team, runID, files)
	case S3:
		t, err := p.s3Target(d.config)
		if err != nil {
			return err
		}
		return deliverS3(ctx, t, team, runID, files)
	}
	return invalidf("%q is not a destination hedge exports to.", d.kind)
}
