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
    private struct State {
        var queueRunning = false
        var lastCommitFailed = false
    }
    private let state = Mutex(State())

    /// Whether the queue's `run()` is running now.
    var queueRunning: Bool {
        get { state.withLock { $0.queueRunning } }
        set { state.withLock { $0.queueRunning = newValue } }
    }

    /// Records the outcome of a commit a request waited for.
    func commit(succeeded: Bool) {
        state.withLock { $0.lastCommitFailed = !succeeded }
    }

    /// Whether the last commit failed.
    var lastCommitFailed: Bool { state.withLock { $0.lastCommitFailed } }

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
