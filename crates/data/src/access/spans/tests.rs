//! The cache of spans' tests. Threads with caches of their own stand for processes: a
//! lock belongs to an open file, so two of them wait for each other as two processes do
//! (the Python tests run processes).

use super::room::{Room, LOCK_NAME, TEMP_PREFIX};
use super::*;
use std::sync::atomic::AtomicUsize;
use std::sync::Barrier;

const A: Object<'static> = Object {
    url: "s3://b/a.tfrecord",
    size: 100,
    version: Some("etag:1"),
};

/// The files of the cache's entries (temporary ones too), by name.
fn files(cache: &SpanCache) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(cache.dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| {
            name != LOCK_NAME && (!name.starts_with('.') || name.starts_with(TEMP_PREFIX))
        })
        .collect();
    names.sort();
    names
}

/// The bytes the cache's files hold, their trailers not counted.
fn size(cache: &SpanCache) -> u64 {
    files(cache)
        .iter()
        .map(|name| entry::counted(fs::metadata(cache.dir().join(name)).unwrap().len()))
        .sum()
}

#[test]
fn an_entry_is_named_after_the_object_as_it_was_and_the_range() {
    let name = entry_name(A, &(0..10));
    assert_eq!(name, entry_name(A, &(0..10)));
    assert!(name.ends_with("-a.tfrecord.0-10.span"), "{name}");
    for other in [
        entry_name(A, &(0..11)),
        entry_name(Object { size: 101, ..A }, &(0..10)),
        entry_name(
            Object {
                version: Some("etag:2"),
                ..A
            },
            &(0..10),
        ),
        entry_name(
            Object {
                url: "s3://c/a.tfrecord",
                ..A
            },
            &(0..10),
        ),
    ] {
        assert_ne!(name, other);
    }
}

#[test]
fn the_least_recently_used_entries_go_to_keep_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let cache = SpanCache::new(dir.path(), 30);
    cache.put(A, &(0..10), &[1; 10]).unwrap();
    cache.put(A, &(10..20), &[2; 10]).unwrap();
    cache.put(A, &(20..30), &[3; 10]).unwrap();
    // Used last: the first one outlives the second.
    let past = SystemTime::now() - std::time::Duration::from_secs(60);
    for (at, range) in [(0, 10..20), (1, 20..30)] {
        let path = cache.dir().join(entry_name(A, &range));
        let file = fs::File::options().write(true).open(path).unwrap();
        file.set_modified(past + std::time::Duration::from_secs(at))
            .unwrap();
    }
    assert_eq!(cache.get(A, &(0..10)), Some(vec![1; 10]));
    cache.put(A, &(30..40), &[4; 10]).unwrap();
    assert_eq!(size(&cache), 30);
    assert_eq!(cache.get(A, &(10..20)), None);
    assert_eq!(cache.get(A, &(0..10)), Some(vec![1; 10]));
    assert_eq!(cache.get(A, &(20..30)), Some(vec![3; 10]));
    // Larger than the limit: not kept, nothing evicted for it.
    cache.put(A, &(0..40), &[5; 40]).unwrap();
    assert_eq!(size(&cache), 30);
    assert_eq!(cache.get(A, &(0..40)), None);
}

#[test]
fn a_new_version_evicts_the_old_ones_entries_and_is_never_read_through_them() {
    let dir = tempfile::tempdir().unwrap();
    let cache = SpanCache::new(dir.path(), 1000);
    let other = Object {
        url: "s3://b/other.tfrecord",
        ..A
    };
    cache.put(A, &(0..10), &[1; 10]).unwrap();
    cache.put(other, &(0..10), &[9; 10]).unwrap();
    let changed = Object {
        version: Some("etag:2"),
        ..A
    };
    assert_eq!(cache.get(changed, &(0..10)), None);
    cache.put(changed, &(0..10), &[2; 10]).unwrap();
    assert_eq!(cache.get(changed, &(0..10)), Some(vec![2; 10]));
    assert_eq!(cache.get(A, &(0..10)), None);
    assert_eq!(cache.get(other, &(0..10)), Some(vec![9; 10]));
    assert_eq!(files(&cache).len(), 2);
}

#[test]
fn a_dead_writers_temporary_file_and_an_entry_of_the_wrong_length_are_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let cache = SpanCache::new(dir.path(), 1000);
    cache.put(A, &(0..10), &[1; 10]).unwrap();
    let name = entry_name(A, &(10..20));
    fs::write(cache.dir().join(format!("{TEMP_PREFIX}{name}")), [7; 4]).unwrap();
    fs::write(cache.dir().join(&name), [7; 4]).unwrap();
    assert_eq!(cache.get(A, &(10..20)), None);
    cache
        .put(A, &(10..20), &[2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
        .unwrap();
    let held = cache.hold(A, &(10..20)).unwrap();
    assert_eq!(held.get(2..5), Some(&[4, 5, 6][..]));
    assert_eq!(held.get(8..11), None);
    assert_eq!(cache.get(A, &(10..20)).map(|b| b.len()), Some(10));
    assert_eq!(files(&cache), [entry_name(A, &(0..10)), name]);
}

#[test]
fn an_entry_damaged_or_cut_short_is_removed_never_read_and_kept_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = SpanCache::new(dir.path(), 1000);
    let bytes: Vec<u8> = (0..10).collect();
    for damage in ["flipped", "cut", "zeroed"] {
        cache.put(A, &(0..10), &bytes).unwrap();
        let path = cache.dir().join(entry_name(A, &(0..10)));
        let mut on_disk = fs::read(&path).unwrap();
        match damage {
            // The length a reader checks is right; the bytes are not.
            "flipped" => on_disk[4] ^= 1,
            "cut" => on_disk.truncate(10),
            // Blocks a crash left unwritten, at the right length.
            _ => on_disk[..8].fill(0),
        }
        fs::write(&path, &on_disk).unwrap();
        // A fresh reader (another process) never gets them, and they go.
        let reader = SpanCache::new(dir.path(), 1000);
        assert_eq!(reader.get(A, &(0..10)), None, "{damage}");
        assert!(!path.exists(), "{damage}");
        let mut fetched = 0;
        let held = reader
            .hold_or_fetch(A, &(0..10), || {
                fetched += 1;
                Ok::<_, ()>(bytes.clone())
            })
            .unwrap();
        assert_eq!((&*held, fetched), (&bytes[..], 1), "{damage}");
        assert_eq!(
            SpanCache::new(dir.path(), 1000).get(A, &(0..10)),
            Some(bytes.clone())
        );
        fs::remove_file(&path).unwrap();
    }
}

#[test]
fn an_object_of_a_long_key_is_kept_under_a_name_a_file_system_takes() {
    let dir = tempfile::tempdir().unwrap();
    let cache = SpanCache::new(dir.path(), 1000);
    let long = |tail: &str| format!("s3://b/{}{tail}", "k".repeat(1000));
    let (url, other, largest) = (long(".tfrecord"), long(".other"), long(".largest"));
    // Keys alike but for their ends are told apart; the largest range's name fits too.
    for (url, size, range, fill) in [
        (&url, 100, 0..10, 1),
        (&other, 100, 0..10, 2),
        (&largest, u64::MAX, u64::MAX - 10..u64::MAX, 3),
    ] {
        let object = Object {
            url,
            size,
            version: Some("etag:1"),
        };
        cache.put(object, &range, &[fill; 10]).unwrap();
        assert_eq!(cache.get(object, &range), Some(vec![fill; 10]));
    }
    assert_eq!(files(&cache).len(), 3);
}

#[test]
fn puts_that_fit_read_the_directory_once_and_the_limit_holds_when_they_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let cache = SpanCache::new(dir.path(), 6400);
    for at in 0..640u64 {
        cache
            .put(A_LARGE, &(at * 10..at * 10 + 10), &[1; 10])
            .unwrap();
    }
    assert_eq!(size(&cache), 6400);
    // One count: the first put's, with no count kept yet.
    assert_eq!(cache.shared.counts.load(Ordering::Relaxed), 1);
    for at in 640..740u64 {
        cache
            .put(A_LARGE, &(at * 10..at * 10 + 10), &[2; 10])
            .unwrap();
        assert!(size(&cache) <= 6400);
    }
    // Each eviction frees a 64th of the limit more than it needs: ten puts a count.
    let counts = cache.shared.counts.load(Ordering::Relaxed);
    assert!(counts <= 1 + 100 / 10 + 1, "{counts}");
    assert_eq!(cache.get(A_LARGE, &(7390..7400)), Some(vec![2; 10]));
}

/// An object of many entries.
const A_LARGE: Object<'static> = Object {
    url: "s3://b/large.tfrecord",
    size: 1 << 20,
    version: Some("etag:1"),
};

#[test]
fn writers_of_many_processes_never_take_more_than_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 500;
    let start = Barrier::new(4);
    std::thread::scope(|scope| {
        for writer in 0..4u64 {
            let (dir, start) = (dir.path(), &start);
            scope.spawn(move || {
                let cache = SpanCache::new(dir, limit);
                start.wait();
                for put in 0..50u64 {
                    let at = (writer * 50 + put) * 100;
                    let len = 1 + (put * 37 + writer * 11) % 90;
                    let bytes = vec![writer as u8; len as usize];
                    cache.put(A_LARGE, &(at..at + len), &bytes).unwrap();
                    // Seen under the room's lock: no writer is between two steps.
                    let room = Room::lock(cache.dir()).unwrap();
                    assert!(size(&cache) <= limit);
                    assert!(room.total().unwrap() >= size(&cache));
                }
            });
        }
    });
    assert!(files(&SpanCache::new(dir.path(), limit))
        .iter()
        .all(|name| !name.starts_with(TEMP_PREFIX)));
}

#[test]
fn processes_missing_the_same_entries_fetch_each_once_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let fetched = AtomicUsize::new(0);
    let start = Barrier::new(8);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            let (dir, fetched, start) = (dir.path(), &fetched, &start);
            scope.spawn(move || {
                let cache = SpanCache::new(dir, 1000);
                start.wait();
                for piece in 0..10u64 {
                    let range = piece * 10..piece * 10 + 10;
                    let held = cache
                        .hold_or_fetch(A, &range, || {
                            fetched.fetch_add(1, Ordering::SeqCst);
                            std::thread::yield_now();
                            Ok::<_, ()>(vec![piece as u8; 10])
                        })
                        .unwrap();
                    assert_eq!(&*held, &[piece as u8; 10]);
                }
            });
        }
    });
    assert_eq!(fetched.load(Ordering::SeqCst), 10);
}

#[test]
fn when_the_first_keeps_nothing_the_next_fetches_itself_and_a_failure_is_told_once() {
    let dir = tempfile::tempdir().unwrap();
    let cache = SpanCache::new(dir.path(), 1000);
    // A fetch that fails keeps nothing: the next one fetches.
    let failed = cache.hold_or_fetch(A, &(0..10), || Err("no store"));
    assert_eq!(failed.unwrap_err(), "no store");
    let held = cache.hold_or_fetch(A, &(0..10), || Ok::<_, ()>(vec![1; 10]));
    assert_eq!(&*held.unwrap(), &[1; 10]);
    // Larger than the limit: never kept, each reader fetches it.
    let small = SpanCache::new(dir.path(), 5);
    for _ in 0..2 {
        let mut fetched = false;
        let held = small.hold_or_fetch(A, &(10..20), || {
            fetched = true;
            Ok::<_, ()>(vec![2; 10])
        });
        assert!(fetched && *held.unwrap() == [2; 10]);
    }
    assert_eq!(small.failure_to_report(), None);
    // A cache that cannot be written to: the read goes on, and it is said once.
    let blocked = dir.path().join("a file");
    fs::write(&blocked, b"").unwrap();
    let unwritable = SpanCache::new(&blocked, 1000);
    for _ in 0..3 {
        let held = unwritable.hold_or_fetch(A, &(0..10), || Ok::<_, ()>(vec![3; 10]));
        assert_eq!(&*held.unwrap(), &[3; 10]);
    }
    let told = unwritable.failure_to_report().unwrap();
    assert!(told.contains("could not keep"), "{told}");
    assert_eq!(unwritable.failure_to_report(), None);
}

#[test]
fn what_an_index_pass_reads_is_kept_in_segments_that_reads_are_served_from() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let cache = SpanCache::new(dir.path(), 1000);
    let bytes: Vec<u8> = (0..40).collect();
    let object = Object { size: 40, ..A };
    let mut through = cache.keeping(object, &bytes[..]);
    let mut read = Vec::new();
    let mut buf = [0; 7];
    loop {
        let n = through.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        read.extend_from_slice(&buf[..n]);
    }
    assert_eq!(read, bytes);
    // Segments of 16 bytes in these tests.
    let mut names = files(&cache);
    names.sort_by_key(|name| name.len());
    assert_eq!(names.len(), 3, "{names:?}");
    // Within one segment, mapped where it lies; across two, copied out of both; all of it.
    let fresh = SpanCache::new(dir.path(), 1000);
    for range in [3..9, 16..32, 10..20, 0..40, 39..40] {
        let held = fresh.hold(object, &range).unwrap();
        assert_eq!(&*held, &bytes[range.start as usize..range.end as usize]);
    }
    assert!(matches!(
        fresh.hold(object, &(3..9)),
        Some(Held::Mapped(..))
    ));
    assert!(fresh.hold(object, &(30..41)).is_none());

    // A pass cut short keeps the segments it read whole, nothing of the rest, and gives
    // back the room it took for it.
    let other = Object {
        url: "s3://b/other.tfrecord",
        ..object
    };
    let mut through = cache.keeping(other, &bytes[..20]);
    std::io::copy(&mut through, &mut std::io::sink()).unwrap();
    drop(through);
    assert!(fresh.hold(other, &(0..16)).is_some());
    assert!(fresh.hold(other, &(16..20)).is_none());
    assert!(files(&cache)
        .iter()
        .all(|name| !name.starts_with(TEMP_PREFIX)));
    let room = Room::lock(cache.dir()).unwrap();
    assert_eq!(room.total(), Some(size(&cache)));
}
