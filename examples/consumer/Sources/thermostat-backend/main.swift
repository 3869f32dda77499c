// thermostat-backend: the thermostat as a rivetd backend. rivetd starts it with
// `--backend thermostat-backend` and speaks RVT1 over its stdin and stdout; it serves
// `ThermostatBackend` through the generated routes and exits when its stdin ends.
import Foundation
import RivetDevice
import RivetDeviceIO
import Thermostat

do {
    let transport = try RivetDeviceStreamTransport(
        stream: RivetFileDescriptorStream(readFD: STDIN_FILENO, writeFD: STDOUT_FILENO), software: "thermostat-backend")
    let router = RivetDeviceRouter()
    try await ThermostatBackend(transport: transport).register(on: router)
    FileHandle.standardError.write(Data("thermostat-backend: serving (pid \(getpid()))\n".utf8))
    try await router.serve(transport)
} catch {
    FileHandle.standardError.write(Data("thermostat-backend: \(error)\n".utf8))
    exit(1)
}
