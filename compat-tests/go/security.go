// Security modes (harness/security.py): the settings of COMPAT_SECURITY_JSON as franz-go options
// (crypto/tls for SSL, pkg/sasl/plain and pkg/sasl/scram for SASL), and the auth_failure scenario.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const authFailureTimeout = 30 * time.Second

type securitySettings struct {
	SecurityProtocol string  `json:"security_protocol"`
	CAFile           *string `json:"ca_file"`
	CertFile         *string `json:"cert_file"`
	KeyFile          *string `json:"key_file"`
	SASLMechanism    *string `json:"sasl_mechanism"`
	Username         *string `json:"username"`
	Password         *string `json:"password"`
}

var security = loadSecurity()

// loadSecurity reads COMPAT_SECURITY_JSON; nil on PLAINTEXT.
func loadSecurity() *securitySettings {
	path := os.Getenv("COMPAT_SECURITY_JSON")
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		panic(fmt.Errorf("reading COMPAT_SECURITY_JSON: %w", err))
	}
	var s securitySettings
	if err := json.Unmarshal(data, &s); err != nil {
		panic(fmt.Errorf("parsing COMPAT_SECURITY_JSON: %w", err))
	}
	return &s
}

// securityOpts are the client options of the security mode (none on PLAINTEXT).
func securityOpts() []kgo.Opt {
	s := security
	if s == nil {
		return nil
	}
	var opts []kgo.Opt
	if s.SecurityProtocol == "SSL" || s.SecurityProtocol == "SASL_SSL" {
		// franz-go sets ServerName from the broker's host (127.0.0.1, in the certificate's SANs).
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if s.CAFile != nil {
			pem, err := os.ReadFile(*s.CAFile)
			if err != nil {
				panic(fmt.Errorf("reading the CA file: %w", err))
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				panic(fmt.Errorf("no certificate in %s", *s.CAFile))
			}
			cfg.RootCAs = pool
		}
		if s.CertFile != nil && s.KeyFile != nil {
			cert, err := tls.LoadX509KeyPair(*s.CertFile, *s.KeyFile)
			if err != nil {
				panic(fmt.Errorf("loading the client certificate: %w", err))
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s.SASLMechanism != nil {
		opts = append(opts, kgo.SASL(saslMechanism(*s.SASLMechanism, *s.Username, *s.Password)))
	}
	return opts
}

func saslMechanism(name, user, password string) sasl.Mechanism {
	switch name {
	case "PLAIN":
		return plain.Auth{User: user, Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	}
	panic(fmt.Errorf("unknown SASL mechanism %q", name))
}

// scenarioAuthFailure: the settings are wrong in one way (password, client certificate or
// truststore); a Ping must fail, and the line printed names what franz-go reported.
func scenarioAuthFailure() {
	if security == nil {
		panic(errNotApplicable{"auth_failure runs in the security modes only"})
	}
	cl := newClient(kgo.RetryTimeout(authFailureTimeout))
	defer cl.Close()
	err := cl.Ping(ctxT(authFailureTimeout))
	check(err != nil, "connected with the wrong settings")
	fmt.Println("wrong settings refused:", err)
	fmt.Println("AUTH_FAILURE: " + describeAuthError(err))
}

// describeAuthError names the error without what changes from run to run (addresses, ports):
// Kafka's error code and the broker's message, a TLS alert received, or the local certificate
// verification failure.
func describeAuthError(err error) string {
	var kafkaErr *kerr.Error
	if errors.As(err, &kafkaErr) {
		// kgo appends the broker's message: "<code>: <description>: <message>".
		message := strings.TrimPrefix(err.Error(), kafkaErr.Error()+": ")
		if message == err.Error() {
			return "kerr." + kafkaErr.Message
		}
		return fmt.Sprintf("kerr.%s (%s)", kafkaErr.Message, message)
	}
	var verify *tls.CertificateVerificationError
	if errors.As(err, &verify) {
		return fmt.Sprintf("tls.CertificateVerificationError (%T)", verify.Err)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "remote error" {
		return fmt.Sprintf("remote error (%v)", op.Err)
	}
	if errors.As(err, &op) {
		return fmt.Sprintf("net.OpError %s (%v)", op.Op, op.Err)
	}
	return fmt.Sprintf("%T (%v)", err, err)
}
