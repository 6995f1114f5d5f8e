use std::time::Duration;

use super::*;
use crate::args::values::EncodeFormat;
use crate::lab_cmd::args::LabCommand;
use attack::RateSpec;
use clap::CommandFactory;
use report::ReportType;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("loadlab").chain(args.iter().copied()))
}

#[test]
fn the_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn typed_values() {
    let Command::Attack(a) =
        parse(&["attack", "http://127.0.0.1/", "--rate", "50/s", "--duration", "1m30s"]).unwrap().command
    else {
        panic!("not an attack")
    };
    assert_eq!(a.load.rate, Some(RateSpec::Constant(50.0)));
    assert_eq!(a.load.duration, Some(Duration::from_secs(90)));
    assert_eq!(a.client.timeout, Duration::from_secs(30));
    let Command::Attack(a) = parse(&["attack", "--rate-steps", "1,2@1s"]).unwrap().command else { panic!() };
    assert_eq!(a.load.rate_steps, Some(RateSpec::Steps(vec![1.0, 2.0], Duration::from_secs(1))));
    let Command::Encode(e) = parse(&["encode", "--to", "vegeta-json"]).unwrap().command else { panic!() };
    assert_eq!(e.to, Some(EncodeFormat::Json));
}

#[test]
fn vegeta_single_dash_flags_parse_as_double_dash_ones() {
    let args = |v: &[&str]| {
        std::iter::once("loadlab").chain(v.iter().copied()).map(Into::into).collect::<Vec<std::ffi::OsString>>()
    };
    let single = args(&[
        "attack",
        "-rate",
        "100",
        "-duration=5s",
        "-http2=false",
        "-keepalive=false",
        "-max-body=0",
        "-H",
        "a: b",
        "-insecure",
        "http://127.0.0.1/",
    ]);
    let double = args(&[
        "attack",
        "--rate",
        "100",
        "--duration=5s",
        "--http2=false",
        "--keepalive=false",
        "--max-body=0",
        "-H",
        "a: b",
        "--insecure",
        "http://127.0.0.1/",
    ]);
    let parsed = |a: Vec<std::ffi::OsString>| match Cli::try_parse_from(vegeta_style(a).unwrap()).unwrap().command {
        Command::Attack(a) => format!("{a:?}"),
        _ => panic!("not an attack"),
    };
    assert_eq!(parsed(single.clone()), parsed(double));
    let Command::Attack(a) = Cli::try_parse_from(vegeta_style(single).unwrap()).unwrap().command else { panic!() };
    assert!(!a.client.protocol.http2 && !a.client.keepalive && a.client.tls.insecure && a.client.max_body == 0);
    assert_eq!(a.load.rate, Some(RateSpec::Constant(100.0)));
    let Command::Attack(a) =
        Cli::try_parse_from(vegeta_style(args(&["attack", "-http2", "-rate=1", "-duration=1s"])).unwrap())
            .unwrap()
            .command
    else {
        panic!()
    };
    assert!(a.client.protocol.http2);
    let Command::Report(r) =
        Cli::try_parse_from(vegeta_style(args(&["report", "-type", "json", "x.llr"])).unwrap()).unwrap().command
    else {
        panic!()
    };
    assert_eq!(r.kind, ReportType::Json);
    // Negative numbers and unknown words stay as they are.
    let kept = vegeta_style(args(&["attack", "-max-body", "-1", "-nope"])).unwrap();
    assert_eq!(kept[3], "-1");
    assert_eq!(kept[4], "-nope");
    // A boolean with its value as a word of its own: Go's flag package reads `-http2 false` as
    // -http2=true and stops there; refused with why, whichever spelling.
    for (flag, value) in [("-http2", "false"), ("--keepalive", "false"), ("-insecure", "true"), ("-h2c", "false")] {
        let e = vegeta_style(args(&["attack", flag, value, "-max-body=0", "http://127.0.0.1/"])).unwrap_err();
        let name = flag.trim_start_matches('-');
        assert_eq!(
            e,
            format!(
                "-{name} {value}: give booleans as -{name}={value}; vegeta reads this line as -{name}=true and \
                 ignores every flag after '{value}'"
            )
        );
    }
    // A value that happens to be "true" after a flag that takes values is fine.
    assert!(vegeta_style(args(&["attack", "-name", "true", "http://127.0.0.1/"])).is_ok());
}

#[test]
fn refusals_name_the_flag() {
    for args in [
        &["attack", "--rate", "10", "--rate-steps", "1,2@1s"][..],
        &["attack", "--http2", "--h2c", "--rate", "1"],
        &["attack", "--ramp", "5s"],
        &["attack", "--timeout", "0s"],
        &["attack", "--connections", "0"],
        &["attack", "--rate", "1e300"],
        &["attack", "--rate", "1,2@1s"],
        &["attack", "--cert", "c.pem"],
        &["report", "--every", "0"],
        &["plot", "-o", "x.svg", "--chart", "pie"],
    ] {
        assert!(parse(args).is_err(), "{args:?}");
    }
}

#[test]
fn attack_and_lab_capacity_map_the_protocol_flags_alike() {
    use attack::Protocol;
    let protocol = |extra: &[&str]| {
        let mut attack = vec!["loadlab", "attack", "https://127.0.0.1:1/", "--rate", "1", "--duration", "1s"];
        attack.extend(extra);
        let mut capacity = vec!["loadlab", "lab", "capacity", "https://127.0.0.1:1/", "--slo", "p99<1s"];
        capacity.extend(extra);
        let Command::Attack(a) = Cli::try_parse_from(attack).unwrap().command else { panic!() };
        let Command::Lab(LabCommand::Capacity(c)) = Cli::try_parse_from(capacity).unwrap().command else { panic!() };
        assert_eq!(a.client.protocol.protocol(), c.protocol.protocol(), "{extra:?}");
        a.client.protocol.protocol()
    };
    assert_eq!(protocol(&[]), Protocol::Http1);
    assert_eq!(protocol(&["--http2"]), Protocol::Http2);
    assert_eq!(protocol(&["--h2c"]), Protocol::H2c);
    assert_eq!(protocol(&["--http3"]), Protocol::Http3);
    for both in [["--http3", "--h2c"], ["--http2", "--h2c"]] {
        let mut args = vec!["loadlab", "lab", "capacity", "https://127.0.0.1:1/", "--slo", "p99<1s"];
        args.extend(both);
        assert!(Cli::try_parse_from(args).is_err(), "{both:?}");
    }
}
