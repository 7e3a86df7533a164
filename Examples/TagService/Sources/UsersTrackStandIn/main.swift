// A loopback stand-in for Braze's `POST /users/track`, for `make bench-service`: accepts every request,
// counts the objects it received, and answers `GET /stats` with the counts. It listens on 127.0.0.1 only
// and exits by itself after `--max-seconds` (default 600).
//
//     UsersTrackStandIn --port 9090 [--max-seconds 600] [--log <file>]
//
// `--log <file>` appends the `title` property of every event it receives, one a line (`make bench-cluster`
// gives each event a unique title, and compares what arrived with what the service acknowledged).
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
var logPath: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = arguments.next().flatMap(Int.init) ?? port
    case "--max-seconds": maximumSeconds = arguments.next().flatMap(Double.init) ?? maximumSeconds
    case "--log": logPath = arguments.next()
    default:
        FileHandle.standardError.write(
            Data("usage: UsersTrackStandIn --port <n> [--max-seconds <s>] [--log <file>]\n".utf8)
        )
        exit(64)
    }
}

let titleLog: FileHandle? = logPath.flatMap { path in
    FileManager.default.createFile(atPath: path, contents: nil)
    return FileHandle(forWritingAtPath: path)
}

let router = Router()
router.post("users/track") { request, _ -> Response in
    var buffer = try await request.body.collect(upTo: 16 << 20)
    let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
    guard case .object(let body)? = try? Value(jsonBytes: bytes) else {
        counts.withLock { $0.unreadable += 1 }
        return Response(status: .badRequest)
    }
    if let titleLog {
        var lines = ""
        for event in body["events"]?.arrayValue ?? [] {
            if case .object(let map) = event, case .object(let properties)? = map["properties"],
                case .string(let title)? = properties["title"]
            {
                lines += title + "\n"
            }
        }
        if !lines.isEmpty { counts.withLock { _ in titleLog.write(Data(lines.utf8)) } }
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
    )
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
