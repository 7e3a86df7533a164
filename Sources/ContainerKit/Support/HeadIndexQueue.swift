/// A first-in, first-out queue: an array and the index of its first element, so taking from the front
/// costs O(1) instead of shifting the array. A taken element is moved out of its slot (released as soon as
/// its taker is done with it); the empty slots are dropped when the queue empties, or once more than
/// ``compactionThreshold`` elements were taken and they are more than half the array.
///
/// Public only as SPI (`@_spi(Hot) import ContainerKit`), with inlinable members: a `package` generic is not
/// specialized in the modules that use it, and the delivery pipeline takes one element per record.
///
/// The one such queue of the package (the session turnstile's waiters and nested pushes, the durable
/// queue's committed records in memory, the memory record store's records).
///
/// ```swift
/// var queue = HeadIndexQueue<Int>()
/// queue.append(contentsOf: [1, 2, 3])
/// queue.popFirst()          // 1
/// queue.popFirst(upTo: 5)   // [2, 3]
/// ```
@_spi(Hot) public struct HeadIndexQueue<Element> {
    /// Taken elements kept before the array is compacted (when they are also more than half of it).
    @inlinable public static var compactionThreshold: Int { 4096 }

    // Taken slots hold `nil`: an element is moved out when taken (no copy, and it is released as soon as
    // its taker lets go of it), and compaction only drops empty slots. Inlinable, so each module that
    // uses the queue gets it specialized for its element type instead of calling generic code per element.
    @usableFromInline var elements: [Element?] = []
    @usableFromInline var head = 0

    /// An empty queue.
    @inlinable public init() {}

    /// The elements waiting.
    @inlinable public var count: Int { elements.count - head }

    /// Whether nothing is waiting.
    @inlinable public var isEmpty: Bool { head == elements.count }

    /// Slots of taken elements not yet compacted away (for tests of the compaction).
    public var takenStorage: Int { head }

    /// The element `offset` places behind the first.
    @inlinable public subscript(offset: Int) -> Element { elements[head + offset]! }

    /// Adds `element` at the back.
    @inlinable public mutating func append(_ element: consuming Element) { elements.append(element) }

    /// Adds `newElements` at the back, in order.
    @inlinable public mutating func append(contentsOf newElements: some Sequence<Element>) {
        for element in newElements { elements.append(element) }
    }

    /// The first element, if any, left in place.
    @inlinable public var first: Element? { head < elements.count ? elements[head] : nil }

    /// Takes the first element, if any.
    @inlinable public mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        let first = elements[head].take()
        head += 1
        compact()
        return first
    }

    /// Takes up to `limit` elements from the front, in order.
    @inlinable public mutating func popFirst(upTo limit: Int) -> [Element] {
        let end = min(elements.count, head + max(0, limit))
        var taken: [Element] = []
        taken.reserveCapacity(end - head)
        for index in head..<end { taken.append(elements[index].take()!) }
        head = end
        compact()
        return taken
    }

    /// Drops up to `count` elements from the front (releasing them now).
    @inlinable public mutating func removeFirst(_ count: Int) {
        let end = min(elements.count, head + max(0, count))
        for index in head..<end { elements[index] = nil }
        head = end
        compact()
    }

    /// Drops every element; `count` of them were waiting.
    @discardableResult
    @inlinable public mutating func removeAll() -> Int {
        defer {
            elements.removeAll()
            head = 0
        }
        return count
    }

    @inlinable mutating func compact() {
        if head == elements.count {
            elements.removeAll(keepingCapacity: elements.count <= Self.compactionThreshold)
            head = 0
        } else if head > Self.compactionThreshold && head * 2 > elements.count {
            elements.removeFirst(head)
            head = 0
        }
    }
}

@_spi(Hot) extension HeadIndexQueue: Sendable where Element: Sendable {}
