import ContainerKit
import Testing

/// Typed values extensions keep on a session: stored once in their own type, saved in snapshots through
/// an attribute.
struct SessionExtensionTests {
    struct Cart: Sendable, Equatable {
        var items: Int
    }

    enum CartKey: SessionExtensionKey {
        static let attributeKey = "shop.cart"
        static func attribute(for cart: Cart) -> Value { ["items": .int(Int64(cart.items))] }
        static func stored(fromAttribute attribute: Value) -> Cart? {
            guard case .object(let members) = attribute, case .int(let items)? = members["items"] else { return nil }
            return Cart(items: Int(items))
        }
    }

    /// A second key storing the same type under another attribute.
    enum WishlistKey: SessionExtensionKey {
        static let attributeKey = "shop.wishlist"
        static func attribute(for cart: Cart) -> Value { CartKey.attribute(for: cart) }
        static func stored(fromAttribute attribute: Value) -> Cart? { CartKey.stored(fromAttribute: attribute) }
    }

    /// A key storing another type under the first key's attribute.
    enum CartSizeKey: SessionExtensionKey {
        static let attributeKey = "shop.cart"
        static func attribute(for items: Int) -> Value { ["items": .int(Int64(items))] }
        static func stored(fromAttribute attribute: Value) -> Int? { CartKey.stored(fromAttribute: attribute)?.items }
    }

    @Test func twoKeysOfOneTypeKeepTheirOwnValues() {
        let session = TagManager().makeDataLayer()
        session.setExtensionValue(Cart(items: 1), for: CartKey.self)
        session.setExtensionValue(Cart(items: 7), for: WishlistKey.self)
        #expect(session.extensionValue(CartKey.self) == Cart(items: 1))
        #expect(session.extensionValue(WishlistKey.self) == Cart(items: 7))
    }

    @Test func keysOfDifferentTypesOverOneAttributeEachReadTheirOwnType() {
        let session = TagManager().makeDataLayer()
        session.setExtensionValue(Cart(items: 4), for: CartKey.self)
        // The other key has never been read: it decodes the attribute the first key saved.
        #expect(session.extensionValue(CartSizeKey.self) == 4)
        #expect(session.extensionValue(CartKey.self) == Cart(items: 4))
    }

    @Test func aTypedValueIsReadBackAsStoredAndSavedAsItsAttribute() {
        let session = TagManager().makeDataLayer()
        #expect(session.extensionValue(CartKey.self) == nil)
        session.setExtensionValue(Cart(items: 3), for: CartKey.self)
        #expect(session.extensionValue(CartKey.self) == Cart(items: 3))
        #expect(session.attribute("shop.cart") == ["items": 3])
        session.setExtensionValue(nil, for: CartKey.self)
        #expect(session.extensionValue(CartKey.self) == nil)
        #expect(session.attribute("shop.cart") == nil)
    }

    @Test func settingTheAttributeDirectlyReplacesTheTypedValue() {
        let session = TagManager().makeDataLayer()
        session.setExtensionValue(Cart(items: 3), for: CartKey.self)
        session.setAttribute(["items": 5], forKey: "shop.cart")
        #expect(session.extensionValue(CartKey.self) == Cart(items: 5))
        session.setAttribute("not a cart", forKey: "shop.cart")
        #expect(session.extensionValue(CartKey.self) == nil)
    }

    @Test func aRestoredSessionDecodesTheTypedValueFromItsSnapshot() {
        let manager = TagManager()
        let session = manager.makeDataLayer()
        session.setExtensionValue(Cart(items: 2), for: CartKey.self)
        let restored = manager.restoreDataLayer(from: session.snapshot())
        #expect(restored.extensionValue(CartKey.self) == Cart(items: 2))
    }
}
