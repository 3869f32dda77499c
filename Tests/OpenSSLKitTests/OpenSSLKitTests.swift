import Testing
@testable import OpenSSLKit
