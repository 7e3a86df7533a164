import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Keeps the container in one file live in a ``TagManager`` and reloads it when the file changes: for
/// services whose containers are deployed as files (a config map, a `scp`, an editor).
///
/// ``run()`` checks the file at once, then every ``interval`` on the tag manager's
/// ``LifecycleConfiguration/clock``. A check costs one `stat`: only when the file's identity (device and
/// inode), size, or modification or status-change time changed is it read (and, as git does, when it was
/// modified within a second of the last read, since a quick second write may leave all of these alone), and
/// only when its content differs (a 64-bit FNV-1a hash) from what was read last is it compiled. A version that compiles replaces the live one atomically
/// (``TagManager/add(_:)``: a push being evaluated finishes on the version it started with). A file that
/// is missing, unreadable, half-written or broken — or that now holds another container ID — keeps the
/// current version live and is reported once per change: a warning on the tag manager's logger (metadata
/// `container`, `path`, `code`) and `failed(.file, …)` on the callback. Files replaced by rename (how
/// editors and deploys write) and files deleted and created again are picked up, since the check follows
/// the path, not an open descriptor.
///
/// Nothing starts in the initializer. Run it with ``TagManager/watch(path:interval:containerID:callback:)``,
/// which loads the file once and hands the watch to ``TagManager/run()``, or run ``run()`` yourself (it has
/// the shape of swift-service-lifecycle's `Service`).
///
/// ```swift
/// let watcher = try await manager.watch(path: "/etc/myservice/GTM-XXXX.json")  // throws if it does not load
/// try await manager.run()  // also checks the file every 2 seconds until cancelled
/// ```
public final class ContainerFileWatcher: Sendable {
    /// The watched file.
    public let path: String
    /// The time between two checks.
    public let interval: Duration

    /// What a `stat` of the file says: a change in any field means the file may have changed.
    struct Signature: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int64
        var modifiedNanoseconds: Int64
        var changed: Int64
        var changedNanoseconds: Int64
    }

    private struct State {
        /// The file as last checked (`nil`: never checked, or missing at the last check).
        var signature: Signature?
        /// Whether the last check found the file missing.
        var missing = false
        /// The hash of the content that is live.
        var liveHash: UInt64?
        /// The hash of the content read last (live or not), so that a failed version is reported once.
        var seenHash: UInt64?
        /// Whether the file was modified within a second of the last read (see ``check()``).
        var racy = false
        var reads = 0
        var container: Container?
        var containerID: String?
        var lastError: ContainerFetchError?
        var running = false
    }

    private weak let tagManager: TagManager?
    private let time: LifecycleTime
    private let options: LoadOptions
    private let logger: any DiagnosticLogger
    private let callback: (any ContainerCallback)?
    private let state: Mutex<State>

    /// Creates a watch of `path` for `tagManager`; nothing is read until ``check()`` or ``run()``.
    /// - Parameters:
    ///   - path: the container file (JSON or property list, as ``ContainerLoader`` reads).
    ///   - tagManager: where the container goes live; its clock, load options and logger are used.
    ///   - interval: the time between two checks (default 2 seconds).
    ///   - containerID: the ID the file must hold; by default the ID of the first version that loads (from
    ///     the file name or the content, as ``ContainerLoader`` decides).
    ///   - callback: told `began(.file)`, then `succeeded(.file)` or `failed(.file, …)`, for each version read.
    public init(
        path: String,
        tagManager: TagManager,
        interval: Duration = .seconds(2),
        containerID: String? = nil,
        callback: (any ContainerCallback)? = nil
    ) {
        let configuration = tagManager.lifecycleConfiguration
        self.path = path
        self.interval = max(interval, .milliseconds(1))
        self.tagManager = tagManager
        self.time = configuration.time
        self.options = configuration.loadOptions
        self.logger = tagManager.logger
        self.callback = callback
        self.state = Mutex(State(containerID: containerID))
    }

    /// The version this watch made live last; `nil` until one loaded.
    public var container: Container? { state.withLock { $0.container } }

    /// Why the file's current content is not live; `nil` when it is.
    public var lastError: ContainerFetchError? { state.withLock { $0.lastError } }

    /// Checks the file once and, if it changed, loads it and makes it live. Checks must not overlap: do not
    /// call it while ``run()`` runs.
    /// - Returns: whether a new version went live.
    /// - Throws: ``ContainerFetchError`` (``ContainerFetchError/Code/notFound``, ``ContainerFetchError/Code/io``,
    ///   ``ContainerFetchError/Code/tooLarge``, ``ContainerFetchError/Code/invalidContainer`` or
    ///   ``ContainerFetchError/Code/invalidContainerID``) when the changed file cannot be used; the live
    ///   version stays. A file that has not changed since it failed throws nothing again (``lastError`` keeps
    ///   the error).
    @discardableResult
    public func check() async throws(ContainerFetchError) -> Bool {
        let signature = Self.signature(of: path)
        enum Step {
            case unchanged
            case missing
            case read(changed: Bool)
        }
        let step = state.withLock { state -> Step in
            guard let signature else {
                if state.missing { return .unchanged }
                state.missing = true
                state.signature = nil
                state.seenHash = nil
                return .missing
            }
            let changed = state.missing || signature != state.signature
            if !changed && !state.racy { return .unchanged }
            state.missing = false
            state.signature = signature
            return .read(changed: changed)
        }
        let bytes: [UInt8]
        let hash: UInt64
        switch step {
        case .unchanged:
            return false
        case .missing:
            emit(.began(.file))
            return try fail(ContainerFetchError(.notFound, "the container file '\(path)' is missing"))
        case .read(let changed):
            // File times come from the system's wall clock: a file modified within a second of this read may
            // change again without its size or time changing, so it is read (and hashed) again next time.
            let readStart = Date().timeIntervalSince1970
            do {
                bytes = try ContainerLoader.readFile(path, limit: options.maximumFileSize, regularOnly: true)
            } catch {
                state.withLock { state in
                    state.seenHash = nil
                    state.racy = false
                }
                guard changed else { return false }
                emit(.began(.file))
                let code: ContainerFetchError.Code = error.code == .fileTooLarge ? .tooLarge : .io
                return try fail(
                    ContainerFetchError(code, "the container file '\(path)' cannot be read: \(error.message)")
                )
            }
            let modified = signature.map { Double($0.modified) + Double($0.modifiedNanoseconds) / 1e9 } ?? 0
            hash = Self.hash(bytes)
            let seen = state.withLock { state -> Bool in
                state.reads += 1
                state.racy = modified >= readStart - 1
                defer { state.seenHash = hash }
                return state.seenHash == hash
            }
            if seen { return false }
            if state.withLock({ $0.liveHash == hash && $0.container != nil }) {
                // Back to the live content (after a broken version, or touched): nothing to load.
                state.withLock { $0.lastError = nil }
                return false
            }
        }
        emit(.began(.file))
        let container: Container
        do {
            container = try ContainerLoader(options: options).load(bytes: bytes, file: path)
        } catch {
            return try fail(
                ContainerFetchError(.invalidContainer, "the container file '\(path)' does not load: \(error)")
            )
        }
        do throws(ContainerFetchError) {
            try publish(container, hash: hash)
        } catch {
            return try fail(error)
        }
        logger.info(
            "loaded the container file",
            metadata: ["container": container.id, "path": path, "version": container.version]
        )
        emit(.succeeded(.file))
        return true
    }

    /// Records and reports `error`, and throws it.
    private func fail(_ error: ContainerFetchError) throws(ContainerFetchError) -> Bool {
        let id = state.withLock { state -> String in
            state.lastError = error
            return state.containerID ?? fileStem
        }
        logger.warning(
            "the container file does not load; the current version stays live",
            metadata: ["container": id, "path": path, "code": error.code.rawValue, "error": error.message]
        )
        emit(.failed(.file, error.refreshFailure))
        throw error
    }

    /// How many times the file was read (for tests: an unchanged file is not read).
    var reads: Int { state.withLock { $0.reads } }

    /// Checks the file at once, then every ``interval`` on the tag manager's clock, until the task is
    /// cancelled; a broken file is reported (see ``check()``) and the watch goes on. On cancellation it
    /// returns at once (nothing to drain). Returns at once if this watch is already running elsewhere.
    public func run() async throws {
        let first = state.withLock { state -> Bool in
            defer { state.running = true }
            return !state.running
        }
        guard first else { return }
        defer { state.withLock { $0.running = false } }
        while !Task.isCancelled && tagManager != nil {
            _ = try? await check()
            await time.sleepUntil(time.now + interval)
        }
    }

    private func publish(_ container: Container, hash: UInt64) throws(ContainerFetchError) {
        guard let tagManager else {
            throw ContainerFetchError(.notConfigured, "the tag manager of the watch of '\(path)' is gone")
        }
        try state.withLock { state throws(ContainerFetchError) in
            if let id = state.containerID, id != container.id {
                throw ContainerFetchError(
                    .invalidContainerID,
                    "the container file '\(path)' now holds '\(container.id)', not '\(id)'"
                )
            }
            state.containerID = container.id
            state.container = container
            state.liveHash = hash
            state.lastError = nil
            tagManager.lifecycle.publish(container, on: tagManager)
        }
        tagManager.lifecycle.deferral.replayIfDue(tagManager)
    }

    private func emit(_ event: ContainerRefreshEvent) {
        guard let callback else { return }
        callback.containerRefresh(state.withLock { $0.containerID } ?? fileStem, event)
    }

    /// The file name without its extension: the container ID until a version loaded.
    private var fileStem: String { URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent }

    /// The file's `stat`, or `nil` when it does not exist (or cannot be examined).
    static func signature(of path: String) -> Signature? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Signature(
            device: UInt64(info.st_dev),
            inode: UInt64(info.st_ino),
            size: Int64(info.st_size),
            modified: Int64(info.st_mtim.tv_sec),
            modifiedNanoseconds: Int64(info.st_mtim.tv_nsec),
            changed: Int64(info.st_ctim.tv_sec),
            changedNanoseconds: Int64(info.st_ctim.tv_nsec)
        )
    }

    /// 64-bit FNV-1a.
    static func hash(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}
