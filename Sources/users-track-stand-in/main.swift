import ContainerKitTesting
// The loopback `/users/track` stand-in as a process, for the example service's load tests
// (`make bench-service`, `make bench-cluster`): accepts every request with objects, counts them, and answers
// `GET /stats` with the counts. It listens on 127.0.0.1 only and exits by itself after `--max-seconds`
// (default 600).
//
//     users-track-stand-in --port 9090 [--max-seconds 600] [--titles <file>]
//
// With `--titles`, the `title` property of every event received is appended to the file, one a line (the
// bench checks by these ids that every acknowledged event arrived).
import Foundation

var port: UInt16 = 9090
var maximumSeconds = 600.0
var titlesPath: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = arguments.next().flatMap { UInt16($0) } ?? port
    case "--max-seconds": maximumSeconds = arguments.next().flatMap(Double.init) ?? maximumSeconds
    case "--titles": titlesPath = arguments.next()
    default:
        FileHandle.standardError.write(
            Data("usage: users-track-stand-in --port <n> [--max-seconds <s>] [--titles <file>]\n".utf8)
        )
        exit(64)
    }
}
do {
    let server = try UsersTrackStandIn(port: port, titlesFile: titlesPath)
    try await server.withRunning { try await Task.sleep(for: .seconds(maximumSeconds)) }
} catch {
    FileHandle.standardError.write(Data("users-track-stand-in: \(error)\n".utf8))
    exit(1)
}
