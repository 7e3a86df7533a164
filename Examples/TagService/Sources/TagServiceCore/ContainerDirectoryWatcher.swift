import ContainerKit
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Loads every container file of a directory into the tag manager, then checks the directory every
/// `interval` — and at once when asked (``requestScan()``: SIGHUP) — and reloads a file whose size or modification
/// time changed.
///
/// A file that does not load is logged and skipped; the version already live stays live (the tag manager
/// swaps containers atomically, so a push in progress finishes on the version it started with). A removed
/// file's container is removed. A directory that cannot be listed for a moment (`EMFILE` under a
/// connection flood, a permission change) changes nothing: the live containers stay, and the failure is
/// logged once, not at every scan, until the directory can be listed again.
final class ContainerDirectoryWatcher: Service, Sendable {
    /// The identity of one file version: which file it is, when it last changed and how large it is.
    struct Stamp: Equatable {
        var device: UInt64
        var inode: UInt64
        var modifiedSeconds: Int64
        var modifiedNanoseconds: Int64
        var size: Int64
    }

    let directory: String
    let interval: Duration
    private let manager: TagManager
    private let logger: Logging.Logger
    /// Container file path → the stamp it had when loaded, and the ID it loaded as.
    private let loaded = Mutex<[String: (stamp: Stamp, id: String)]>([:])
    /// Paths that failed to load, with the stamp that failed (not retried until it changes).
    private let failed = Mutex<[String: Stamp]>([:])
    /// Whether the last listing failed (the failure is logged when it starts and when it ends).
    private let listingFails = Mutex(false)
    /// Asks ``run()`` for a scan before the interval ends (at most one waits: more asks are one scan).
    private let requests: AsyncStream<Void>
    private let request: AsyncStream<Void>.Continuation

    init(directory: String, interval: Duration, manager: TagManager, logger: Logging.Logger) {
        self.directory = directory
        self.interval = interval
        self.manager = manager
        self.logger = logger
        (requests, request) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a scan now, rather than at the end of the interval; ``run()`` makes it (one at a time).
    func requestScan() { request.yield() }

    /// Loads what changed since the last scan.
    /// - Returns: how many containers were loaded or reloaded.
    @discardableResult
    func scan() async -> Int {
        guard let files = containerFiles() else { return 0 }
        var changed = 0
        for (path, stamp) in files.sorted(by: { $0.key < $1.key }) {
            if loaded.withLock({ $0[path]?.stamp }) == stamp || failed.withLock({ $0[path] }) == stamp { continue }
            do {
                let container = try await ContainerLoader().load(path: path)
                let previous = loaded.withLock { $0.updateValue((stamp, container.id), forKey: path) }
                failed.withLock { _ = $0.removeValue(forKey: path) }
                manager.add(container)
                changed += 1
                logger.info(
                    previous == nil ? "container loaded" : "container reloaded",
                    metadata: ["container": "\(container.id)", "version": "\(container.version)", "file": "\(path)"]
                )
            } catch {
                failed.withLock { $0[path] = stamp }
                logger.error(
                    "container file does not load; keeping the live version",
                    metadata: ["file": "\(path)", "error": "\(error)"]
                )
            }
        }
        let removed = loaded.withLock { table -> [(String, String)] in
            let gone = table.filter { files[$0.key] == nil }.map { ($0.key, $0.value.id) }
            for (path, _) in gone { table.removeValue(forKey: path) }
            return gone
        }
        for (path, id) in removed {
            _ = manager.remove(id: id)
            logger.warning("container file removed", metadata: ["container": "\(id)", "file": "\(path)"])
        }
        return changed + removed.count
    }

    /// Checks the directory every ``interval``, and when asked (``requestScan()``), until graceful shutdown; one
    /// scan at a time.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    while (try? await Task.sleep(for: self.interval)) != nil { self.request.yield() }
                }
                // Ends when the task is cancelled.
                for await _ in self.requests { await self.scan() }
                group.cancelAll()
            }
        }
    }

    /// The container files of the directory with their stamps; `nil` when the directory cannot be listed
    /// now (which says nothing about its files: none of them is taken as removed).
    private func containerFiles() -> [String: Stamp]? {
        let fileManager = FileManager.default
        let names: [String]
        do {
            names = try fileManager.contentsOfDirectory(atPath: directory)
        } catch {
            if !listingFails.withLock({ $0 }) {
                listingFails.withLock { $0 = true }
                logger.error(
                    "cannot list the containers directory; the live containers stay",
                    metadata: ["directory": "\(directory)", "error": "\(error.localizedDescription)"]
                )
            }
            return nil
        }
        if listingFails.withLock({ $0 }) {
            listingFails.withLock { $0 = false }
            logger.notice("the containers directory can be listed again", metadata: ["directory": "\(directory)"])
        }
        var files: [String: Stamp] = [:]
        for name in names where name.hasSuffix(".json") || name.hasSuffix(".plist") {
            guard ContainerLoader.containerID(fromFileName: name) != nil else { continue }
            let path = (directory as NSString).appendingPathComponent(name)
            // stat(2) follows a symbolic link to the file it names: a Kubernetes ConfigMap mounts each file as a
            // link into a `..data` directory that an update swaps, so the file it names (its inode) tells a new
            // version even when its time and size do not.
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            files[path] = Stamp(
                device: UInt64(info.st_dev),
                inode: UInt64(info.st_ino),
                modifiedSeconds: Int64(info.st_mtim.tv_sec),
                modifiedNanoseconds: Int64(info.st_mtim.tv_nsec),
                size: Int64(info.st_size)
            )
        }
        return files
    }
}
