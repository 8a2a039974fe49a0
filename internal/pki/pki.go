// Package pki makes certificate authorities and server certificates in
// Go. It stands in for OpenBao's PKI engine where the tests need
// certificates: the CA of the local environment, and the wrong CA a
// suite proves verification with.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte
}

// NewCA makes a CA named name, valid for a day.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"podroles test environment"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Issue makes a server certificate for the names (DNS names, or IP
// addresses), and returns it and its key as PEM.
func (ca *CA) Issue(names ...string) (certPEM, keyPEM []byte, err error) {
	return ca.issue(pkix.Name{CommonName: names[0]}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, names)
}

// IssueClient makes a client certificate for a user in groups (Kubernetes
// reads the user from the common name and the groups from the
// organizations).
func (ca *CA) IssueClient(user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	return ca.issue(pkix.Name{CommonName: user, Organization: groups}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil)
}

func (ca *CA) issue(subject pkix.Name, usage []x509.ExtKeyUsage, names []string) (certPEM, keyPEM []byte, err error) {
	return ca.issueBetween(subject, usage, names, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

func (ca *CA) issueBetween(subject pkix.Name, usage []x509.ExtKeyUsage, names []string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	return n
}

// KeyPEM returns the CA's key as PEM (PKCS #8), for a server that signs
// with it (a service-account issuer).
func (ca *CA) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// PublicKeyPEM returns the CA's public key as PEM.
func (ca *CA) PublicKeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(&ca.Key.PublicKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// IssueExpired makes a server certificate for the names that expired a
// day ago, for a test that needs one.
func (ca *CA) IssueExpired(names ...string) (certPEM, keyPEM []byte, err error) {
	return ca.issueBetween(pkix.Name{CommonName: names[0]}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, names,
		time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
}
