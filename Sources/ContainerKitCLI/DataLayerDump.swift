/// Splits a data-layer dump — one JSON array of pushes, `copy(JSON.stringify(dataLayer))` — into its items as its
/// bytes arrive, so each item is read (and refused) on its own, and a dump of any length is read in the memory of its
/// largest item. It follows only what it must to find an item's end: strings (with their escapes) and brackets; the
/// item itself is then parsed as a line is.
///
/// An array whose first item is a string is not a dump but one gtag command written over several lines
/// (`["consent", "update", {…}]`): it is kept whole and handed out as one ``Piece/command(bytes:line:column:)``.
struct DataLayerDump {
    /// What the bytes fed so far completed.
    enum Piece: Equatable {
        /// Item `index`, whole: its bytes (line breaks kept, so positions in it are positions in the item), and where
        /// its first byte is in the input.
        case item(bytes: [UInt8], index: Int, line: Int, column: Int)
        /// A gtag command written over several lines: the whole array, from its `[` at `line`:`column`.
        case command(bytes: [UInt8], line: Int, column: Int)
        /// Item `index` is longer than the limit; its bytes were not kept.
        case tooLong(index: Int, line: Int, column: Int)
        /// The array itself is broken at `line`:`column` (a `syntax_error`): nothing after it is read.
        case broken(message: String, line: Int, column: Int)
    }

    private enum State {
        /// Before the array's `[`.
        case start
        /// Before an item: after `[` (`first`) or after a comma.
        case beforeItem(first: Bool)
        /// Inside item `index`.
        case inItem
        /// After an item, before `,` or `]`.
        case afterItem
        /// After the closing `]`: only blanks may follow.
        case ended
        /// The array is broken (already said): the rest is ignored.
        case stopped
    }

    private let limit: Int
    private var state = State.start
    /// The position of the last byte consumed: 1-based line, and column in Unicode scalars (0 before a line's first).
    private(set) var line = 1
    private var column = 0
    /// Brackets open in the current item, and whether it is inside a string (and just after its backslash).
    private var depth = 0
    private var inString = false
    private var escaped = false
    /// The current item's bytes, where it starts, and whether it is past the limit (then its bytes are not kept).
    private var item: [UInt8] = []
    private var itemLine = 0
    private var itemColumn = 0
    private var itemTooLong = false
    /// The index of the current (or next) item.
    private var index = 0
    /// Whether the array is one gtag command (its first item is a string): then `item` holds the whole array.
    private var isCommand = false
    /// The blanks between the array's `[` and its first item: a command keeps them, so positions in it stay right.
    private var opening: [UInt8] = []
    private var commandLine = 0
    private var commandColumn = 0

    /// A splitter keeping items of at most `limit` bytes.
    init(limit: Int) { self.limit = limit }

    /// The pieces `bytes`, a whole input, make: fed at once, or in two chunks cut at `cut` (as a pipe may give them),
    /// which must make the same pieces (what the tests and the fuzz harness check).
    static func pieces(of bytes: [UInt8], cutAt cut: Int? = nil, limit: Int) -> [Piece] {
        var pieces: [Piece] = []
        var splitter = DataLayerDump(limit: limit)
        let cut = Swift.min(Swift.max(cut ?? bytes.count, 0), bytes.count)
        splitter.feed(bytes[..<cut], into: &pieces)
        splitter.feed(bytes[cut...], into: &pieces)
        splitter.finish(into: &pieces)
        return pieces
    }

    /// Consumes `bytes`, the next bytes of the input, and appends the pieces they complete to `pieces`.
    mutating func feed(_ bytes: some Sequence<UInt8>, into pieces: inout [Piece]) {
        for byte in bytes {
            if byte == 0x0A {
                line += 1
                column = 0
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            consume(byte, into: &pieces)
        }
    }

    /// Ends the input: a dump cut short is said where it ends.
    mutating func finish(into pieces: inout [Piece]) {
        let what: String
        switch state {
        case .ended, .stopped: return
        case .start: what = "the input ends before the data-layer dump's '['"
        case .beforeItem, .afterItem: what = "the data-layer dump ends before its closing ']'"
        case .inItem: what = "the data-layer dump ends inside dataLayer[\(index)], before its closing ']'"
        }
        pieces.append(.broken(message: what, line: line, column: column + 1))
        state = .stopped
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private mutating func consume(_ byte: UInt8, into pieces: inout [Piece]) {
        switch state {
        case .stopped:
            return
        case .start:
            if Self.isBlank(byte) { return }
            guard byte == UInt8(ascii: "[") else { return broken("expected '[' to start the data-layer dump", &pieces) }
            (commandLine, commandColumn) = (line, column)
            state = .beforeItem(first: true)
        case .beforeItem(let first):
            if Self.isBlank(byte) {
                if first && opening.count < limit { opening.append(byte) }
                return
            }
            if byte == UInt8(ascii: "]") {
                if first {
                    state = .ended  // `[]`: an empty dump
                    return
                }
                return broken("expected a push after ',', found ']'", &pieces)
            }
            if byte == UInt8(ascii: ",") { return broken("expected a push before ','", &pieces) }
            if first && byte == UInt8(ascii: "\"") {
                // `["consent", …` over several lines: one command, kept whole from its '['.
                isCommand = true
                item = [UInt8(ascii: "[")] + opening
                itemTooLong = false
            } else {
                item.removeAll(keepingCapacity: true)
                itemTooLong = false
            }
            (itemLine, itemColumn) = (line, column)
            depth = 0
            state = .inItem
            take(byte, into: &pieces)
        case .inItem:
            take(byte, into: &pieces)
        case .afterItem:
            if Self.isBlank(byte) { return }
            if byte == UInt8(ascii: ",") {
                state = .beforeItem(first: false)
            } else if byte == UInt8(ascii: "]") {
                state = .ended
            } else {
                broken("expected ',' or ']' after dataLayer[\(index - 1)]", &pieces)
            }
        case .ended:
            if !Self.isBlank(byte) { broken("unexpected text after the data-layer dump's closing ']'", &pieces) }
        }
    }

    /// A byte of the current item: kept, and followed through strings and brackets to the item's end.
    private mutating func take(_ byte: UInt8, into pieces: inout [Piece]) {
        if inString {
            keep(byte)
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                inString = false
                if depth == 0 && !isCommand { complete(&pieces) }
            }
            return
        }
        switch byte {
        case UInt8(ascii: "\""):
            inString = true
            keep(byte)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            depth += 1
            keep(byte)
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            if depth == 0 {
                // The end of a bare value (`7]`), or of the array itself.
                if isCommand {
                    keep(byte)
                    return completeCommand(&pieces)
                }
                complete(&pieces)
                return consume(byte, into: &pieces)
            }
            depth -= 1
            keep(byte)
            if depth == 0 && !isCommand { complete(&pieces) }
        case UInt8(ascii: ","), 0x20, 0x09, 0x0A, 0x0D:
            if depth == 0 && !isCommand {
                // The end of a bare value (`7,`).
                complete(&pieces)
                return consume(byte, into: &pieces)
            }
            keep(byte)
        default:
            keep(byte)
        }
    }

    private mutating func keep(_ byte: UInt8) {
        if itemTooLong { return }
        if item.count == limit {
            itemTooLong = true
            item = []
            return
        }
        item.append(byte)
    }

    private mutating func complete(_ pieces: inout [Piece]) {
        if itemTooLong {
            pieces.append(.tooLong(index: index, line: itemLine, column: itemColumn))
        } else {
            pieces.append(.item(bytes: item, index: index, line: itemLine, column: itemColumn))
        }
        item = []
        index += 1
        state = .afterItem
    }

    private mutating func completeCommand(_ pieces: inout [Piece]) {
        if itemTooLong {
            pieces.append(.tooLong(index: 0, line: commandLine, column: commandColumn))
        } else {
            pieces.append(.command(bytes: item, line: commandLine, column: commandColumn))
        }
        item = []
        state = .ended
    }

    private mutating func broken(_ message: String, _ pieces: inout [Piece]) {
        pieces.append(.broken(message: message, line: line, column: column))
        state = .stopped
    }
}
