import Foundation
import Synchronization

/// What `/ready` knows beyond the live containers: whether the record queue's `run()` is running, and how
/// the last commit of records went.
///
/// A full disk does not change the queue directory's permissions, so asking the file system whether it is
/// writable says nothing; the last commit's outcome does. After a failed commit, `/ready` writes and syncs
/// a small probe file in the queue directory at each check, so that it turns ready again as soon as space
/// is back (a load balancer that stopped sending events would otherwise never see a commit succeed).
final class Readiness: Sendable {
    // Two independent flags, each an atomic: every answered request records its commit's outcome, and a lock
    // (or a write of an unchanged value to a line all requests share) per request bought nothing.
    private let running = Atomic<Bool>(false)
    private let failed = Atomic<Bool>(false)

    /// Whether the queue's `run()` is running now.
    var queueRunning: Bool {
        get { running.load(ordering: .acquiring) }
        set { running.store(newValue, ordering: .releasing) }
    }

    /// Records the outcome of a commit a request waited for (written only when it changes).
    func commit(succeeded: Bool) {
        if failed.load(ordering: .relaxed) == succeeded { failed.store(!succeeded, ordering: .relaxed) }
    }

    /// Whether the last commit failed.
    var lastCommitFailed: Bool { failed.load(ordering: .relaxed) }

    /// Whether `directory` takes a synced write of one block now.
    static func probe(_ directory: String) -> Bool {
        let path = directory + "/.ready-probe"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer {
            close(fd)
            unlink(path)
        }
        let block = [UInt8](repeating: 0, count: 4096)
        let written = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return written == block.count && fsync(fd) == 0
    }
}
