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
