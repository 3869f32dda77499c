import CommandLineKit
import Foundation
import Testing

@Suite struct ProcessEnvironmentTests {
    @Test func theProcessEnvironmentIsReadAsProcessInfoReadsIt() {
        let name = "COMMANDLINEKIT_TEST_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        setenv(name, "a=b c", 1)
        defer { unsetenv(name) }
        let environment = ProcessEnvironment.current()
        #expect(environment[name] == "a=b c")
        #expect(environment == ProcessInfo.processInfo.environment)
    }
}
