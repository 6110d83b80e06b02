import XCTest
import AudioGraph
import AudioGraphProcessing

/// The processing nodes are part of the built-in registry.
final class ProcessingCatalogTests: XCTestCase {
    func testEveryProcessingNodeTypeIsBuiltIn() {
        let builtIn = NodeRegistry.builtIn
        for type in ProcessingNodes.all {
            XCTAssertNotNil(builtIn[type.descriptor.typeID], "\(type.descriptor.typeID) is registered")
        }
    }
}
