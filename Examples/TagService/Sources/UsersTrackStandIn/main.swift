// A loopback stand-in for Braze's `POST /users/track`, for `make bench-service`: accepts every request,
// counts the objects it received, and answers `GET /stats` with the counts. It listens on 127.0.0.1 only
// and exits by itself after `--max-seconds` (default 600). Once it listens it writes
// `[users-track-stand-in] listening port=<n>` to standard error (`--port 0` picks a free port).
//
//     UsersTrackStandIn --port 9090 [--max-seconds 600] [--titles <file>]
//
// With `--titles`, the `title` property of every event received is appended to the file, one a line (the
// bench checks by these ids that every acknowledged event arrived).
import ContainerKit
import Foundation
import Hummingbird
import Synchronization

struct Counts: Sendable {
    var requests = 0
    var events = 0
    var purchases = 0
    var attributes = 0
    var unreadable = 0
}

let counts = Mutex(Counts())
var port = 9090
var maximumSeconds = 600.0
var titlesPath: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = arguments.next().flatMap(Int.init) ?? port
    case "--max-seconds": maximumSeconds = arguments.next().flatMap(Double.init) ?? maximumSeconds
    case "--titles": titlesPath = arguments.next()
    default:
        FileHandle.standardError.write(
            Data("usage: UsersTrackStandIn --port <n> [--max-seconds <s>] [--titles <file>]\n".utf8)
        )
        exit(64)
    }
}

let titles: Mutex<FileHandle?> = Mutex(
    titlesPath.flatMap { path in
        FileManager.default.createFile(atPath: path, contents: nil) ? FileHandle(forWritingAtPath: path) : nil
    }
)

let router = Router()
router.post("users/track") { request, _ -> Response in
    var buffer = try await request.body.collect(upTo: 16 << 20)
    let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
    guard case .object(let body)? = try? Value(jsonBytes: bytes) else {
        counts.withLock { $0.unreadable += 1 }
        return Response(status: .badRequest)
    }
    if let events = body["events"]?.arrayValue {
        var lines = ""
        for event in events {
            if let title = event.objectValue?["properties"]?.objectValue?["title"]?.stringValue {
                lines += title + "\n"
            }
        }
        if !lines.isEmpty { titles.withLock { $0?.write(Data(lines.utf8)) } }
    }
    counts.withLock { counts in
        counts.requests += 1
        counts.events += body["events"]?.arrayValue?.count ?? 0
        counts.purchases += body["purchases"]?.arrayValue?.count ?? 0
        counts.attributes += body["attributes"]?.arrayValue?.count ?? 0
    }
    return Response(
        status: .created,
        headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"message":"success"}"#))
    )
}
router.get("stats") { _, _ -> Response in
    let current = counts.withLock { $0 }
    let text = """
        {"requests":\(current.requests),"events":\(current.events),"purchases":\(current.purchases),\
        "attributes":\(current.attributes),"objects":\(current.events + current.purchases + current.attributes),\
        "unreadable":\(current.unreadable)}
        """
    return Response(
        status: .ok,
        headers: [.contentType: "application/json"],
        body: ResponseBody(byteBuffer: ByteBuffer(string: text))
    )
}

let app = Application(
    router: router,
    configuration: ApplicationConfiguration(
        address: .hostname("127.0.0.1", port: port),
        serverName: "users-track-stand-in"
    ),
    onServerRunning: { channel in
        let port = channel.localAddress?.port ?? 0
        FileHandle.standardError.write(Data("[users-track-stand-in] listening port=\(port)\n".utf8))
    }
)
try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await app.runService() }
    group.addTask {
        try await Task.sleep(for: .seconds(maximumSeconds))
        throw CancellationError()
    }
    _ = try await group.next()
    group.cancelAll()
}
