/// A service that sends Braze calls links `ContainerKitBraze` and uses the delivery types it is built on
/// (``AnalyticsRecord``, ``AnalyticsSink``, the queue fronts, ``DeliveryPipeline``) without a second import.
@_exported import ContainerKitDelivery
