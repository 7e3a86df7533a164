import Testing

@testable import ContainerKitHTTP

/// The answer parser the client's I/O thread feeds, without I/O: the same answer cut anywhere reads the
/// same, and the limits hold as bytes arrive.
@Suite struct HTTPResponseParserTests {
    /// Feeds `answer` in pieces of `piece` bytes, then (with `close`) the end of the stream.
    static func parse(
        _ answer: String,
        piece: Int,
        limit: Int = 1024,
        method: String = "POST",
        close: Bool = false
    ) throws(BoundedHTTPError) -> (BoundedHTTPResponse, reusable: Bool)? {
        var parser = HTTPResponseParser(method: method, limit: limit)
        let bytes = Array(answer.utf8)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + piece)
            parser.feed(Array(bytes[offset..<end]))
            offset = end
            if case .complete(let response, let reusable) = try parser.advance() { return (response, reusable) }
        }
        guard close else { return nil }
        parser.endOfStream()
        if case .complete(let response, let reusable) = try parser.advance() { return (response, reusable) }
        return nil
    }

    static let chunked =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nx-a: 2\r\n\r\n"
        + "4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nTrailer: t\r\n\r\n"

    @Test(arguments: [1, 2, 3, 7, 64, 4096])
    func aChunkedAnswerReadsTheSameWhereverItIsCut(piece: Int) throws {
        let (response, reusable) = try #require(try Self.parse(Self.chunked, piece: piece))
        #expect(response.status == 200)
        #expect(response.body == Array("Wikipedia".utf8))
        #expect(response.headers["x-a"] == "1, 2")
        #expect(reusable)
    }

    @Test(arguments: [1, 5, 4096])
    func aLengthDelimitedAnswerAfterAnInterimOneIsReusable(piece: Int) throws {
        let answer = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc"
        let (response, reusable) = try #require(try Self.parse(answer, piece: piece))
        #expect(response.status == 201)
        #expect(response.body == Array("abc".utf8))
        #expect(reusable)
    }

    @Test func anAnswerWithoutALengthRunsToTheEndOfTheStreamAndIsNotReusable() throws {
        let answer = "HTTP/1.1 200 OK\r\n\r\nto the end"
        #expect(try Self.parse(answer, piece: 3) == nil)
        let (response, reusable) = try #require(try Self.parse(answer, piece: 3, close: true))
        #expect(response.body == Array("to the end".utf8))
        #expect(!reusable)
    }

    @Test func aHeadAnswerHasNoBody() throws {
        let answer = "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"
        let (response, reusable) = try #require(try Self.parse(answer, piece: 8, method: "HEAD"))
        #expect(response.body.isEmpty)
        #expect(reusable)
    }

    @Test func connectionCloseMakesTheConnectionNotReusable() throws {
        let answer = "HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\nok"
        let (_, reusable) = try #require(try Self.parse(answer, piece: 4))
        #expect(!reusable)
    }

    @Test func aDeclaredLengthOverTheLimitFailsBeforeTheBody() {
        #expect(throws: BoundedHTTPError(.tooLarge(declared: 5000))) {
            try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n", piece: 64, limit: 100)
        }
    }

    @Test func chunksOverTheLimitFailAsTheyArrive() {
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + String(repeating: "x", count: 64)
        #expect(throws: BoundedHTTPError(.tooLarge(declared: nil))) { try Self.parse(answer, piece: 16, limit: 32) }
    }

    @Test func aBodyCutShortIsTruncated() {
        #expect(throws: BoundedHTTPError(.truncated(received: 2, expected: 10))) {
            try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab", piece: 5, close: true)
        }
    }

    @Test func anEncodedAnswerIsRefusedAtItsHeader() {
        #expect(throws: BoundedHTTPError(.unsupportedEncoding("gzip"))) {
            try Self.parse("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\n", piece: 9)
        }
    }

    @Test func anEndlessHeaderFailsAtItsLimit() {
        var parser = HTTPResponseParser(method: "GET", limit: 10)
        parser.feed(Array("HTTP/1.1 200 OK\r\nX: ".utf8))
        let filler = [UInt8](repeating: 65, count: 8192)
        #expect(throws: BoundedHTTPError.self) {
            for _ in 0..<9 {
                parser.feed(filler)
                _ = try parser.advance()
            }
        }
    }

    /// `-1` was read as minus one and trapped in the parser (taking -1 bytes); a sign, `0x`, a blank before
    /// the digits, a 16th digit or other bytes after them are refused as a bad answer.
    @Test(arguments: ["-1", "+1", "-0", "0x10", " 1", "1x", "1 x", "", ";ext", "1000000000000000", "\u{FF}"])
    func aChunkSizeLineThatIsNotHexDigitsIsRefused(line: String) {
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(line)\r\nabc\r\n0\r\n\r\n"
        for piece in [1, 4096] {
            #expect(throws: BoundedHTTPError.self, "\(line) in pieces of \(piece)") {
                try Self.parse(answer, piece: piece, close: true)
            }
        }
    }

    @Test(arguments: ["3", "003", "3;name=value", "3 ; name", "3\t;x"])
    func aChunkSizeWithExtensionsOrLeadingZerosReads(line: String) throws {
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(line)\r\nabc\r\n0\r\n\r\n"
        let (response, _) = try #require(try Self.parse(answer, piece: 5))
        #expect(response.body == Array("abc".utf8))
    }

    /// The limits held only while bytes were missing: a header, chunk-size line or trailer over its limit that
    /// came in one read (with its end) was taken, and the same bytes in smaller reads refused.
    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 70_000) + "\r\nContent-Length: 2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;" + String(repeating: "e", count: 2000)
            + "\r\nok\r\n0\r\n\r\n",
        // A trailer line of 65,536 bytes and its CR: one byte more than a line may hold.
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: " + String(repeating: "t", count: 65_533)
            + "\r\n\r\n",
    ])
    func aPartOverItsLimitFailsAlsoWhenItArrivesInOneRead(answer: String) {
        for piece in [1 << 20, 16 * 1024, 1000] {
            #expect(throws: BoundedHTTPError.self, "in pieces of \(piece)") {
                try Self.parse(answer, piece: piece, limit: 1 << 20, close: true)
            }
        }
    }

    @Test func aStreamClosedBeforeAnyByteSaysSo() {
        #expect(throws: BoundedHTTPError(.connectionFailed, "closed without an answer")) {
            try Self.parse("", piece: 1, close: true)
        }
    }
    /// A chunk-size line is hexadecimal digits only: a sign, a prefix or a leading blank is refused with a
    /// clear error, never read as a negative or huge size (`-1` used to trap the process).
    @Test(arguments: ["-1", "-0", "+5", "0x5", " 5", "", ";x", "fffffffffffffffff", "5 5"])
    func aChunkSizeThatIsNotHexDigitsIsRefused(size: String) {
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n"
        for piece in [1, 4096] {
            #expect {
                try Self.parse(answer, piece: piece)
            } throws: { error in
                (error as? BoundedHTTPError)?.kind == .badResponse
            }
        }
    }

    @Test(arguments: ["5", "5;name=value", "5 ;x", "05", "0005\t"])
    func aChunkSizeWithExtensionsOrLeadingZerosIsRead(size: String) throws {
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n"
        let (response, _) = try #require(try Self.parse(answer, piece: 3))
        #expect(response.body == Array("hello".utf8))
    }

    @Test(arguments: ["+5", "-0", "5, 5", "", "1e2", "99999999999999999999"])
    func aContentLengthThatIsNotDecimalDigitsIsRefused(length: String) {
        #expect {
            try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: \(length)\r\n\r\nhello", piece: 64)
        } throws: { error in
            (error as? BoundedHTTPError)?.kind == .badResponse
        }
    }
}
