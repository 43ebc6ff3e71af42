//! What `spool serve` says as it starts (issue 32): a data directory that is a file
//! is refused in words that say so; a SASL listener with no user to log in as starts
//! with a warning; the start line names every listener.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn serve(data_dir: &std::path::Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spool"));
    command
        .args(["serve", "--admin-listen", "off", "--data-dir"])
        .arg(data_dir)
        .args(extra)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    command
}

#[test]
fn a_data_directory_that_is_a_file_is_refused_in_words_that_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let output = serve(&file, &["--listen", &listen]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is a file, not a directory") && !stderr.contains("File exists"),
        "{stderr}"
    );
}

#[test]
fn a_sasl_listener_without_users_starts_with_a_warning_and_the_start_line_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, sasl) = (free_port(), free_port());
    let listeners =
        format!("listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}");
    let mut child = serve(
        &dir.path().join("data"),
        &[
            "--set",
            &listeners,
            "--set",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Both streams, line by line, until the start line.
    let (lines, seen) = mpsc::channel();
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let lines = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
    }
    let mut said = Vec::new();
    while !said
        .iter()
        .any(|l: &String| l.starts_with("spool listening on"))
    {
        match seen.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => said.push(line),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let start = said
        .iter()
        .find(|l| l.starts_with("spool listening on"))
        .unwrap_or_else(|| panic!("no start line: {said:?}"));
    assert!(
        start.contains(&format!("127.0.0.1:{plain} (PLAINTEXT)"))
            && start.contains(&format!("127.0.0.1:{sasl} (SASL_PLAINTEXT)")),
        "{start}"
    );
    assert!(
        said.iter()
            .any(|l| l.contains("WARN") && l.contains("no user has credentials")),
        "{said:?}"
    );
}
