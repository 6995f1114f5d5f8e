//! Trust in the roots a user listed (`--root-cert`, PostgreSQL's `sslrootcert`), as OpenSSL and
//! so libpq and curl give it: a server may present one of those certificates itself. The
//! PostgreSQL manual makes a server's certificate with `openssl req -x509`, which marks it a CA
//! and names the host in its common name only; webpki refuses a CA as a server's certificate
//! (`CaUsedAsEndEntity`) and reads no common name. Such a certificate, byte for byte one the
//! user listed, is taken; its dates, and its name unless any name is allowed, are still checked,
//! as libpq checks them (the subject's alternative names, or its common name when it has none).

use std::net::IpAddr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};
use x509_parser::extensions::GeneralName;
use x509_parser::time::ASN1Time;

/// The chain checked by webpki; a listed certificate presented as it is, checked here.
#[derive(Debug)]
pub(super) struct Listed {
    pub chain: Arc<WebPkiServerVerifier>,
    pub listed: Vec<CertificateDer<'static>>,
    /// Any name (PostgreSQL's `verify-ca`): the chain or listing is checked, the name is not.
    pub any_name: bool,
}

impl ServerCertVerifier for Listed {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let checked = self.chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match checked {
            Err(Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. }))
                if self.any_name =>
            {
                Ok(ServerCertVerified::assertion())
            }
            Err(Error::InvalidCertificate(_)) if self.listed.iter().any(|c| c.as_ref() == end_entity.as_ref()) => {
                as_listed(end_entity, server_name, now, self.any_name)
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

/// A listed certificate's own checks: in its dates, and for `name` unless `any_name`.
fn as_listed(
    cert: &CertificateDer<'_>,
    name: &ServerName<'_>,
    now: UnixTime,
    any_name: bool,
) -> Result<ServerCertVerified, Error> {
    let bad = |e: CertificateError| Err(Error::InvalidCertificate(e));
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(cert.as_ref()) else {
        return bad(CertificateError::BadEncoding);
    };
    let now = ASN1Time::from_timestamp(now.as_secs() as i64)
        .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
    let validity = parsed.validity();
    if now < validity.not_before {
        return bad(CertificateError::NotValidYet);
    }
    if now > validity.not_after {
        return bad(CertificateError::Expired);
    }
    if any_name {
        return Ok(ServerCertVerified::assertion());
    }
    let alternatives: Vec<GeneralName<'_>> = match parsed.subject_alternative_name() {
        Ok(Some(san)) => san.value.general_names.clone(),
        Ok(None) => Vec::new(),
        Err(_) => return bad(CertificateError::BadEncoding),
    };
    let common_names: Vec<&str> = parsed.subject().iter_common_name().filter_map(|cn| cn.as_str().ok()).collect();
    if is_for(name, &alternatives, &common_names) {
        return Ok(ServerCertVerified::assertion());
    }
    let mut presented: Vec<String> = alternatives
        .iter()
        .filter_map(|g| match g {
            GeneralName::DNSName(d) => Some(format!("DnsName({d:?})")),
            GeneralName::IPAddress(b) => Some(format!("IpAddress({b:?})")),
            _ => None,
        })
        .collect();
    presented.extend(common_names.iter().map(|cn| format!("CommonName({cn:?})")));
    bad(CertificateError::NotValidForNameContext { expected: name.to_owned(), presented })
}

/// Whether a certificate with these alternative and common names is for `name`: libpq reads
/// the alternative names of the kind asked for, and the common name only when there are none.
fn is_for(name: &ServerName<'_>, alternatives: &[GeneralName<'_>], common_names: &[&str]) -> bool {
    match name {
        ServerName::DnsName(host) => {
            let dns: Vec<&str> = alternatives
                .iter()
                .filter_map(|g| if let GeneralName::DNSName(d) = g { Some(*d) } else { None })
                .collect();
            let names = if dns.is_empty() { common_names } else { &dns[..] };
            names.iter().any(|pattern| dns_matches(pattern, host.as_ref()))
        }
        ServerName::IpAddress(ip) => {
            let ip = IpAddr::from(*ip);
            let ips: Vec<IpAddr> = alternatives
                .iter()
                .filter_map(|g| match g {
                    GeneralName::IPAddress(b) if b.len() == 4 => Some(IpAddr::from(<[u8; 4]>::try_from(*b).ok()?)),
                    GeneralName::IPAddress(b) if b.len() == 16 => Some(IpAddr::from(<[u8; 16]>::try_from(*b).ok()?)),
                    _ => None,
                })
                .collect();
            if ips.is_empty() {
                common_names.iter().any(|cn| cn.parse::<IpAddr>().is_ok_and(|c| c == ip))
            } else {
                ips.contains(&ip)
            }
        }
        _ => false,
    }
}

/// `pattern` names `host`: the same letters whatever their case, or `*.` standing for the first
/// label of `host` alone, as libpq matches.
fn dns_matches(pattern: &str, host: &str) -> bool {
    let (pattern, host) = (pattern.trim_end_matches('.'), host.trim_end_matches('.'));
    match pattern.strip_prefix("*.") {
        Some(rest) => {
            host.split_once('.').is_some_and(|(first, tail)| !first.is_empty() && tail.eq_ignore_ascii_case(rest))
        }
        None => pattern.eq_ignore_ascii_case(host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_as_libpq_matches_them() {
        let host = |h: &str| ServerName::try_from(h.to_owned()).unwrap();
        assert!(is_for(&host("DB.example.com"), &[], &["db.example.com"]));
        assert!(is_for(&host("db.example.com"), &[GeneralName::DNSName("*.example.com")], &["other"]));
        // Alternative names of the kind asked for hide the common name.
        assert!(!is_for(&host("db.example.com"), &[GeneralName::DNSName("x.example.com")], &["db.example.com"]));
        assert!(!is_for(&host("a.db.example.com"), &[GeneralName::DNSName("*.example.com")], &[]));
        assert!(!is_for(&host("example.com"), &[GeneralName::DNSName("*.example.com")], &[]));
        assert!(is_for(&host("127.0.0.1"), &[], &["127.0.0.1"]));
        assert!(is_for(
            &host("127.0.0.1"),
            &[GeneralName::DNSName("localhost"), GeneralName::IPAddress(&[127, 0, 0, 1])],
            &[]
        ));
        assert!(!is_for(&host("127.0.0.2"), &[GeneralName::IPAddress(&[127, 0, 0, 1])], &["127.0.0.2"]));
    }

    /// The PostgreSQL manual's certificate: `openssl req -x509 -subj /CN=NAME`, so a CA with its
    /// name in the common name alone, valid between `from` and `to` (years).
    fn manuals(name: &str, from: i32, to: i32) -> CertificateDer<'static> {
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.distinguished_name.push(rcgen::DnType::CommonName, name);
        p.not_before = rcgen::date_time_ymd(from, 1, 1);
        p.not_after = rcgen::date_time_ymd(to, 1, 1);
        p.self_signed(&rcgen::KeyPair::generate().unwrap()).unwrap().der().clone()
    }

    #[test]
    fn a_listed_certificate_is_still_checked_for_its_dates_and_name() {
        let now = UnixTime::now();
        let db = ServerName::try_from("db.example.com").unwrap();
        let fine = manuals("db.example.com", 2000, 2200);
        assert!(as_listed(&fine, &db, now, false).is_ok());
        let other = ServerName::try_from("other.example.com").unwrap();
        let wrong = as_listed(&fine, &other, now, false).unwrap_err().to_string();
        assert!(wrong.contains("not valid for name") && wrong.contains("CommonName(\"db.example.com\")"), "{wrong}");
        assert!(as_listed(&fine, &other, now, true).is_ok(), "verify-ca: any name");
        let expired = as_listed(&manuals("db.example.com", 2000, 2001), &db, now, true).unwrap_err();
        assert_eq!(expired, Error::InvalidCertificate(CertificateError::Expired));
        let early = as_listed(&manuals("db.example.com", 2190, 2200), &db, now, false).unwrap_err();
        assert_eq!(early, Error::InvalidCertificate(CertificateError::NotValidYet));
    }
}
