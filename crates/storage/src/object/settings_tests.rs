//! Network settings hold per call: a store already built for a server is not reused by a
//! call made with other settings.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::storage_for;
use crate::retry::{set_network_bounds, NetworkBounds};

/// A server on 127.0.0.1 that answers every request `503` (at most 50 of them) and
/// counts them.
fn unavailable_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(50) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (url, count)
}

#[test]
fn a_second_call_with_other_retries_on_the_same_server_is_tried_as_often_as_it_says() {
    let (server, count) = unavailable_server();
    let file = format!("{server}/data/x.tfrecord");
    let tries = |retries: usize| {
        set_network_bounds(NetworkBounds {
            retries,
            ..NetworkBounds::default()
        });
        let before = count.load(Ordering::SeqCst);
        let (storage, path) = storage_for(Path::new(&file)).unwrap();
        assert!(storage.size(&path).is_err());
        count.load(Ordering::SeqCst) - before
    };
    let first = tries(1);
    let second = tries(3);
    let again = tries(1);
    set_network_bounds(NetworkBounds::default());
    assert_eq!((first, second, again), (2, 4, 2));
}
