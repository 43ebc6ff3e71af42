//! `spool user`, `spool acl` and `spool quota` against a broker enforcing ACLs, and the
//! other commands logged in with `--sasl-mechanism PLAIN`: a super user makes a user,
//! grants it a prefix, sets its quota; the user's produce is allowed there only; a
//! user that is not a super user may not change ACLs. The admin commands also log in
//! with SCRAM, and so do the client commands (TLS is tested with real certificates in
//! `compat/test_security.py`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use spool_testkit::TestBroker;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// Runs `spool` against `addr` as `user` (PLAIN), feeding `input`: (exit code,
/// stdout, stderr).
async fn spool(
    addr: SocketAddr,
    user: (&str, &str),
    args: &[&str],
    input: &str,
) -> (i32, String, String) {
    spool_with(addr, "PLAIN", user, args, input).await
}

/// [`spool`] logged in with `mechanism`.
async fn spool_with(
    addr: SocketAddr,
    mechanism: &str,
    user: (&str, &str),
    args: &[&str],
    input: &str,
) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spool"))
        .args(args)
        .args(["--brokers", &addr.to_string(), "--timeout", "5"])
        .env("SPOOL_SASL_MECHANISM", mechanism)
        .env("SPOOL_SASL_USERNAME", user.0)
        .env("SPOOL_SASL_PASSWORD", user.1)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the command finishes")
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn users_acls_and_quotas_are_managed_and_enforced() {
    let broker = TestBroker::start_secured(
        &[
            ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
            ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256"),
            ("authorizer.enabled", "true"),
            ("super.users", "User:admin"),
        ],
        ("admin", "admin-secret"),
    )
    .await;
    let addr = broker.listener_addr("SASL_PLAINTEXT");
    let admin = ("admin", "admin-secret");
    let alice = ("alice", "alice-secret");

    let (code, _, err) = spool(
        addr,
        admin,
        &["user", "create", "alice", "--password", "alice-secret"],
        "",
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let (_, users, _) = spool(addr, admin, &["user", "list", "--format", "json"], "").await;
    let users = json(&users);
    assert_eq!(users.as_array().unwrap().len(), 2, "{users}");
    assert_eq!(users[1]["user"], "alice");
    assert_eq!(users[1]["mechanisms"]["SCRAM-SHA-512"], 8192);

    for topic in ["orders-eu", "payments"] {
        let (code, _, err) = spool(addr, admin, &["topic", "create", topic], "").await;
        assert_eq!(code, 0, "{err}");
    }
    let grant = [
        "acl",
        "create",
        "--topic",
        "orders-",
        "--prefixed",
        "--principal",
        "User:alice",
        "--operation",
        "write",
    ];
    let (code, _, err) = spool(addr, admin, &grant, "").await;
    assert_eq!(code, 0, "{err}");
    let (_, listed, _) = spool(
        addr,
        admin,
        &[
            "acl",
            "list",
            "--principal",
            "User:alice",
            "--format",
            "json",
        ],
        "",
    )
    .await;
    let listed = json(&listed);
    assert_eq!(listed[0]["name"], "orders-");
    assert_eq!(listed[0]["pattern"], "prefixed");
    assert_eq!(listed[0]["operation"], "write");

    let (code, _, err) = spool(
        addr,
        admin,
        &[
            "quota",
            "set",
            "--user",
            "alice",
            "producer_byte_rate=1048576",
        ],
        "",
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let (_, quotas, _) = spool(addr, admin, &["quota", "list", "--format", "json"], "").await;
    let quotas = json(&quotas);
    assert_eq!(quotas[0]["entity"], "user=alice");
    assert_eq!(quotas[0]["value"], 1_048_576.0);

    // alice writes where the prefix allows, and nowhere else.
    let (code, _, err) = spool(addr, alice, &["produce", "orders-eu"], "one\ntwo\n").await;
    assert_eq!(code, 0, "{err}");
    let (code, _, _) = spool(addr, alice, &["produce", "payments"], "three\n").await;
    assert_ne!(code, 0, "payments is not alice's to write");
    // alice may not manage ACLs.
    let (code, _, err) = spool(addr, alice, &["acl", "list"], "").await;
    assert_eq!(code, 1);
    assert!(err.contains("CLUSTER_AUTHORIZATION_FAILED"), "{err}");

    // Deleting without naming what is a usage error, not every binding gone.
    let (code, _, _) = spool(addr, admin, &["acl", "delete"], "").await;
    assert_eq!(code, 2);
    let (code, out, _) = spool(
        addr,
        admin,
        &[
            "acl",
            "delete",
            "--topic",
            "orders-",
            "--prefixed",
            "--format",
            "json",
        ],
        "",
    )
    .await;
    assert_eq!(code, 0);
    assert_eq!(json(&out).as_array().unwrap().len(), 1);
    let (code, _, _) = spool(
        addr,
        admin,
        &["quota", "remove", "--user", "alice", "producer_byte_rate"],
        "",
    )
    .await;
    assert_eq!(code, 0);
    let (code, _, _) = spool(addr, admin, &["user", "delete", "alice"], "").await;
    assert_eq!(code, 0);
    let (code, _, _) = spool(addr, admin, &["user", "delete", "alice"], "").await;
    assert_eq!(code, 3, "no such user any more");
}

/// The CLI's own connection logs in with SCRAM too (PLAIN is the only mechanism of
/// the commands on librdkafka): a wrong password and a mechanism the listener does
/// not offer fail with exit 1 and say why.
#[tokio::test(flavor = "multi_thread")]
async fn user_acl_and_quota_commands_log_in_with_scram() {
    let broker = TestBroker::start_secured(
        &[
            ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
            ("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512"),
        ],
        ("admin", "admin-secret"),
    )
    .await;
    let addr = broker.addr().to_string();
    let run = |mechanism: &'static str, password: &'static str| {
        let addr = addr.clone();
        async move {
            let output = Command::new(env!("CARGO_BIN_EXE_spool"))
                .args(["user", "list", "--format", "json", "--timeout", "5"])
                .args(["--brokers", &addr, "--sasl-mechanism", mechanism])
                .args(["--sasl-username", "admin", "--sasl-password", password])
                .env_remove("RUST_LOG")
                .output()
                .await
                .unwrap();
            (
                output.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&output.stdout).into_owned(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }
    };
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let (code, out, err) = run(mechanism, "admin-secret").await;
        assert_eq!(code, 0, "{mechanism}: {err}");
        assert!(out.contains("\"admin\""), "{out}");
    }
    let (code, _, err) = run("SCRAM-SHA-512", "wrong").await;
    assert_eq!(code, 1);
    assert!(err.contains("login as admin failed"), "{err}");
    let (code, _, err) = run("PLAIN", "admin-secret").await;
    assert_eq!(code, 1);
    assert!(err.contains("does not take SASL PLAIN"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_client_command_logs_in_with_scram() {
    let broker = TestBroker::start_secured(
        &[
            ("listeners", "SASL_PLAINTEXT://127.0.0.1:0"),
            ("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512"),
        ],
        ("admin", "admin-secret"),
    )
    .await;
    let addr = broker.listener_addr("SASL_PLAINTEXT");
    let admin = ("admin", "admin-secret");
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let topic = format!("t-{}", &mechanism[10..]);
        let (code, _, err) = spool_with(
            addr,
            mechanism,
            admin,
            &["topic", "create", &topic, "-p", "2"],
            "",
        )
        .await;
        assert_eq!(code, 0, "{mechanism}: {err}");
        let (code, _, err) =
            spool_with(addr, mechanism, admin, &["produce", &topic], "one\ntwo\n").await;
        assert_eq!(code, 0, "{mechanism}: {err}");
        let (code, out, err) = spool_with(
            addr,
            mechanism,
            admin,
            &["consume", &topic, "-e", "-g", "readers"],
            "",
        )
        .await;
        assert_eq!(code, 0, "{mechanism}: {err}");
        let mut got: Vec<&str> = out.lines().collect();
        got.sort_unstable();
        assert_eq!(got, ["one", "two"], "{mechanism}");
        let (code, out, err) = spool_with(
            addr,
            mechanism,
            admin,
            &["group", "describe", "readers"],
            "",
        )
        .await;
        assert_eq!(code, 0, "{mechanism}: {err}");
        assert!(out.contains(&topic), "{mechanism}: {out}");
    }
    let (code, _, err) = spool_with(
        addr,
        "SCRAM-SHA-256",
        ("admin", "wrong"),
        &["topic", "list"],
        "",
    )
    .await;
    assert_eq!(
        code, 1,
        "a wrong password is refused, not a cluster unreachable: {err}"
    );
    assert!(err.contains("SASL authentication error"), "{err}");
}
