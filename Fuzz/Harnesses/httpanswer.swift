// The HTTP answer parser of `HTTPClient` (answers of untrusted servers: `/users/track`, container URLs,
// preview), differentially: the same bytes fed whole and fed in pieces cut where the input says must read the
// same — status, headers, body, failure or not, complete or not — and a complete body stays within the limit.
//
// Input: a flags byte (bit 0: a HEAD request, else POST; bit 1: the server closes after the bytes; bits 2-3:
// the body limit, 1 MiB, 16, 100 or 4096 bytes), a byte whose low 3 bits are the number of cuts, three bytes
// (big-endian, modulo the answer's length + 1) per cut, then the answer's bytes.
@testable import ContainerKitHTTP

enum HTTPAnswerOutcome: Equatable {
    case needMore
    case failed
    /// `reusable` is `nil` when the answer completed before its last piece arrived (bytes after it were not
    /// seen yet, so whether the connection can be reused is not comparable).
    case complete(status: Int, headers: [String: String], body: [UInt8], reusable: Bool?)

    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.needMore, .needMore), (.failed, .failed): true
        case (.complete(let s1, let h1, let b1, let r1), .complete(let s2, let h2, let b2, let r2)):
            s1 == s2 && h1 == h2 && b1 == b2 && (r1 == nil || r2 == nil || r1 == r2)
        default: false
        }
    }
}

extension HTTPAnswerOutcome {
    var summary: String {
        switch self {
        case .needMore: "needs more"
        case .failed: "failed"
        case .complete(let status, let headers, let body, let reusable):
            "complete: \(status), \(headers.keys.sorted()), \(body.count) body bytes, reusable \(reusable.map(String.init) ?? "?")"
        }
    }
}

func readAnswer(_ pieces: [ArraySlice<UInt8>], method: String, limit: Int, close: Bool) -> HTTPAnswerOutcome {
    var parser = HTTPResponseParser(method: method, limit: limit)
    do {
        for (index, piece) in pieces.enumerated() {
            parser.feed(Array(piece))
            if case .complete(let response, let reusable) = try parser.advance() {
                let last = index == pieces.count - 1
                return .complete(
                    status: response.status,
                    headers: response.headers,
                    body: response.body,
                    reusable: last ? reusable : nil
                )
            }
        }
        guard close else { return .needMore }
        parser.endOfStream()
        if case .complete(let response, let reusable) = try parser.advance() {
            return .complete(
                status: response.status,
                headers: response.headers,
                body: response.body,
                reusable: reusable
            )
        }
        return .needMore
    } catch {
        return .failed
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPAnswer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard bytes.count >= 2 else { return 0 }
    let flags = bytes[0]
    let cuts = Int(bytes[1] & 7)
    guard bytes.count >= 2 + 3 * cuts else { return 0 }
    let answer = bytes[(2 + 3 * cuts)...]
    let method = flags & 1 == 1 ? "HEAD" : "POST"
    let close = flags & 2 == 2
    let limit = [1 << 20, 16, 100, 4096][Int(flags >> 2 & 3)]

    var points: [Int] = (0..<cuts).map { index in
        let at = 2 + 3 * index
        let raw = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
        return answer.startIndex + raw % (answer.count + 1)
    }
    points.sort()
    var pieces: [ArraySlice<UInt8>] = []
    var from = answer.startIndex
    for point in points + [answer.endIndex] {
        pieces.append(answer[from..<point])
        from = point
    }

    let whole = readAnswer([answer], method: method, limit: limit, close: close)
    let split = readAnswer(pieces, method: method, limit: limit, close: close)
    if whole != split {
        let cuts = points.map { $0 - answer.startIndex }
        fatalError("the answer reads differently whole (\(whole.summary)) and cut at \(cuts) (\(split.summary))")
    }
    if case .complete(let status, _, let body, _) = whole {
        precondition(body.count <= limit, "a body of \(body.count) bytes passed the limit of \(limit)")
        precondition((100..<1000).contains(status), "status \(status)")
        if method == "HEAD" || status == 204 || status == 304 { precondition(body.isEmpty, "a body where none may be") }
    }
    return 0
}
