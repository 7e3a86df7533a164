// A session row read back from PostgreSQL: `PostgresSessionPersistence.load` reads `ck_sessions.snapshot` (a
// `text` column, decoded by PostgresNIO as a String) with `SessionSnapshot(jsonText:)`. (The other rows it
// parses, `ck_records.payload`, are `AnalyticsRecord(jsonLine:)`: the `queuerecord` harness covers them.)
//
// Input: the column's bytes. A snapshot that reads must read back equal from the text the store writes for it
// (`jsonText`); the session restored from it takes a push through a bundled container (when the harness runs
// from the repository), and the snapshot after that push must read back equal from its text too.
import ContainerKit
import Foundation

/// A manager with the bundled container, made at the first input. It is released at exit, before LeakSanitizer's
/// final scan: kept, its expression trees were reported as leaked (they are reachable only through enum payload
/// pointers whose spare bits carry the case, which the scan does not take for pointers).
nonisolated(unsafe) var pgrowManager: TagManager?
nonisolated(unsafe) var pgrowManagerMade = false

func makeManager() -> TagManager? {
    if pgrowManagerMade { return pgrowManager }
    pgrowManagerMade = true
    let path = "Containers/GTM-MUSIC01.json"
    guard let bytes = FileManager.default.contents(atPath: path),
        let container = try? ContainerLoader().load(bytes: [UInt8](bytes), file: path)
    else { return nil }
    let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .none))
    manager.add(container)
    pgrowManager = manager
    atexit { pgrowManager = nil }
    return manager
}

func readsBack(_ snapshot: SessionSnapshot) -> Bool {
    (try? SessionSnapshot(jsonText: snapshot.jsonText)) == snapshot
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPostgresRow(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: fuzzBytes(data, size), as: UTF8.self)
    guard let snapshot = try? SessionSnapshot(jsonText: text) else { return 0 }
    precondition(readsBack(snapshot), "a snapshot read from a row does not read back from its own text")
    guard let manager = makeManager() else { return 0 }
    let layer = manager.restoreDataLayer(from: snapshot)
    _ = layer.push(event: "played song", parameters: ["title": "So What", "genre": "jazz", "duration": 545])
    // A snapshot at the largest event number a load accepts (2^53 - 1) is over it after one more event: that
    // one does not read back, as a session that counted 9e15 events would not.
    if snapshot.eventNumber < 9_007_199_254_740_991 {
        precondition(readsBack(layer.snapshot()), "the snapshot after a push does not read back from its own text")
    }
    return 0
}
