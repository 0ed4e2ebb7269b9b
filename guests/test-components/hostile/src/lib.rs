//! A hostile component for the host's tests. As a card validator it loops, exhausts memory or
//! traps when the card's name asks it to; as a probe it tries to leave its sandbox.

wit_bindgen::generate!({ world: "hostile", path: "wit" });

use exports::openadapt::engines::validator::{Card, Guest as Validator, Verdict};
use exports::openadapt::hostile::probe::Guest as Probe;
use std::io::Write;

struct Hostile;

impl Validator for Hostile {
    fn validate(card: Card) -> Verdict {
        match card.name.as_str() {
            "loop_forever" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "eat_memory" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "trap_now" => unreachable!("asked to trap"),
            _ => Verdict::Accepted,
        }
    }
}

impl Probe for Hostile {
    fn attempt(what: String) -> Result<String, String> {
        let shown = |r: std::io::Result<String>| r.map_err(|e| e.to_string());
        match what.as_str() {
            "read-inside" => shown(std::fs::read_to_string("/bundle/workflow.json")),
            "read-parent" => shown(std::fs::read_to_string("/bundle/../outside.txt")),
            "read-absolute" => shown(std::fs::read_to_string("/etc/passwd")),
            "read-host-path" => shown(std::fs::read_to_string(env_path())),
            "read-symlink" => shown(std::fs::read_to_string("/bundle/link-out")),
            "list-root" => shown(std::fs::read_dir("/").map(|d| d.count().to_string())),
            "write-readonly" => shown(
                std::fs::File::create("/bundle/planted.txt")
                    .and_then(|mut f| f.write_all(b"planted"))
                    .map(|_| "written".to_string()),
            ),
            "socket" => shown(std::net::TcpStream::connect("127.0.0.1:9").map(|_| "connected".into())),
            "resolve" => shown(
                std::net::ToSocketAddrs::to_socket_addrs("localhost:80").map(|a| a.count().to_string()),
            ),
            "env" => Ok(std::env::vars().count().to_string()),
            "args" => Ok(std::env::args().count().to_string()),
            "clock" => Ok(std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs().to_string())
                .unwrap_or_default()),
            _ => Err("unknown attempt".into()),
        }
    }
}

/// The host directory the test made, as an absolute host path (tests pass it in a file).
fn env_path() -> String {
    std::fs::read_to_string("/bundle/host-path.txt").unwrap_or_default().trim().to_string()
}

export!(Hostile);
