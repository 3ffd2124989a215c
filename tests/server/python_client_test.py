#!/usr/bin/python3
"""A tool in another language uses the service: Python with Debian's
python3-grpcio calls a running scatterd, checks the points, and asks
health and reflection. Stubs are generated from the protos at test time.

Usage: python_client_test.py SCATTERD PROTO_ROOT
"""

import importlib.util
import math
import os
import signal
import subprocess
import sys
import tempfile

import grpc
from grpc_tools import protoc

GRPC_PROTO = "/usr/share/grpc-proto"


def generate(out):
    for root, name in ((sys.argv[2], "scatter/v1/scatter.proto"),
                       (GRPC_PROTO, "grpc/health/v1/health.proto"),
                       (GRPC_PROTO, "grpc/reflection/v1alpha/reflection.proto")):
        if protoc.main(["protoc", "-I" + root, "--python_out=" + out,
                        "--grpc_python_out=" + out, os.path.join(root, name)]) != 0:
            raise RuntimeError("protoc failed on " + name)
    sys.path.insert(0, out)
    # grpc.health and grpc.reflection live under the installed grpc package's
    # name: let it find the generated modules too.
    grpc.__path__.append(os.path.join(out, "grpc"))


def check_min_distance(coords, r):
    """Exact pairwise check through a grid of cell r: no pair closer than r."""
    cells = {}
    for i in range(0, len(coords), 2):
        cells.setdefault((int(coords[i] // r), int(coords[i + 1] // r)), []).append(i)
    worst = math.inf
    for (cx, cy), members in cells.items():
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for j in cells.get((cx + dx, cy + dy), ()):
                    for i in members:
                        if i < j:
                            d2 = (coords[i] - coords[j]) ** 2 + (coords[i + 1] - coords[j + 1]) ** 2
                            worst = min(worst, d2)
    return worst >= r * r


def check_points_script(port):
    """client/python/scatter_points.py prints one CSV line per point, takes
    --count and --timeout, ends quietly when its reader goes away, and
    leaves nothing in the temporary directory."""
    script = os.path.join(sys.argv[2], "..", "client", "python", "scatter_points.py")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TMPDIR=tmp)
        run = subprocess.run(
            ["/usr/bin/python3", script, "--address=127.0.0.1:%d" % port,
             "--box=0,0,20,20", "--method=uniform", "--count=123", "--timeout=20"],
            env=env, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert len(lines) == 123, len(lines)
        for line in lines:
            x, y, layer, point_id = line.split(",")
            assert 0 <= float(x) < 20 and 0 <= float(y) < 20, line
        assert "summary: 123 points" in run.stderr, run.stderr
        assert os.listdir(tmp) == [], os.listdir(tmp)
        # --max_points is a cap the caller asked for: reaching it succeeds.
        capped = subprocess.run(
            ["/usr/bin/python3", script, "--address=127.0.0.1:%d" % port,
             "--box=0,0,20,20", "--spacing=1", "--max_points=5", "--timeout=20"],
            env=env, capture_output=True, text=True, timeout=60)
        assert capped.returncode == 0, capped.stderr
        assert len(capped.stdout.splitlines()) == 5, capped.stdout
        assert "summary: 5 points, the --max_points cap" in capped.stderr, capped.stderr
        # A box left of and below the origin, given as "--box -10,-10,10,10"
        # (argparse alone took the value for an option: "expected one
        # argument").
        negative = subprocess.run(
            ["/usr/bin/python3", script, "--address=127.0.0.1:%d" % port,
             "--box", "-10,-10,10,10", "--spacing=2", "--timeout=20"],
            env=env, capture_output=True, text=True, timeout=60)
        assert negative.returncode == 0, negative.stderr
        assert len(negative.stdout.splitlines()) > 20, negative.stdout
        for line in negative.stdout.splitlines():
            x, y, layer, point_id = line.split(",")
            assert -10 <= float(x) < 10 and -10 <= float(y) < 10, line
        # Coordinates are written as the scatter CLI writes them
        # (std::to_chars: fewest digits, fixed or scientific, whichever is
        # shorter), not as Python's repr (5.0, 100000.0).
        spec = importlib.util.spec_from_file_location("scatter_points", script)
        points_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(points_module)
        for value, text in ((5.0, "5"), (-2.5, "-2.5"), (-0.0, "-0"), (0.1, "0.1"),
                            (100000.0, "1e+05"), (123000.0, "123000"),
                            (0.0001, "1e-04"), (0.001, "0.001"), (1e-05, "1e-05"),
                            (1.5e-07, "1.5e-07"), (12345.678, "12345.678"),
                            (123456789012345680.0, "123456789012345680"),
                            (8.248849854254471e+20, "824884985425447092224"),
                            (1e+21, "1e+21"), (5e-324, "5e-324"),
                            # Where repr is used as it is, and where not.
                            (0.00012, "0.00012"), (-0.0001234, "-0.0001234"),
                            (0.0002, "2e-04"), (0.0012, "0.0012"),
                            (1e16, "1e+16"), (123456789012345.6, "123456789012345.6")):
            assert points_module.shortest(value) == text, (value, text)
        # A caller with a "scatter" package of its own, imported or not:
        # the stubs still load, and the caller's package stays its own
        # (a directory of stubs without __init__.py lost to it).
        project = os.path.join(tmp, "project")
        os.makedirs(os.path.join(project, "scatter"))
        with open(os.path.join(project, "scatter", "__init__.py"), "w") as f:
            f.write("MINE = True\n")
        for preload in ("", "import scatter; "):
            user = subprocess.run(
                ["/usr/bin/python3", "-c",
                 "import sys; sys.path[:0] = [%r, %r]; %simport scatter_points; "
                 "pb, _ = scatter_points.load_stubs(); import scatter; "
                 "print(pb.ScatterRequest.DESCRIPTOR.full_name, scatter.MINE)"
                 % (project, os.path.dirname(script), preload)],
                env=env, capture_output=True, text=True, timeout=60)
            assert user.stdout == "scatter.v1.ScatterRequest True\n", (preload, user.stdout,
                                                                        user.stderr)
        # Leaving a Points loop early cancels the call (it ran on, holding
        # a stream slot, until the channel closed: 8.5 s in a review).
        pb, pb_grpc = points_module.load_stubs()
        big = pb.ScatterRequest(seed=1)
        big.region.box.min.extend([0, 0])
        big.region.box.max.extend([2000, 2000])
        big.layers.add(spacing=1.0)
        with points_module.open_channel("127.0.0.1:%d" % port) as channel:
            points = points_module.Points(pb_grpc.ScatterServiceStub(channel), big, 60)
            for _ in points:
                break
            assert points._responses.code() == grpc.StatusCode.CANCELLED, \
                points._responses.code()
        # A reader that stops early (`| head -1`), millions of points before
        # the end: a quiet exit with SIGPIPE's status, no traceback.
        early = subprocess.Popen(
            ["/usr/bin/python3", script, "--address=127.0.0.1:%d" % port,
             "--box=0,0,2000,2000", "--spacing=1", "--timeout=60"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = early.stdout.readline()
        early.stdout.close()
        _, err = early.communicate(timeout=60)
        assert first.count(",") == 3, first
        assert early.returncode == 141 and err == "", (early.returncode, err)
        # Ctrl-C in the middle of a long stream: the process dies of SIGINT,
        # as the C++ `scatter` does, without a Python traceback.
        interrupted = subprocess.Popen(
            ["/usr/bin/python3", script, "--address=127.0.0.1:%d" % port,
             "--box=0,0,2000,2000", "--spacing=1", "--timeout=60"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = interrupted.stdout.readline()
        interrupted.send_signal(signal.SIGINT)
        _, err = interrupted.communicate(timeout=60)
        assert first.count(",") == 3, first
        assert interrupted.returncode == -signal.SIGINT, interrupted.returncode
        assert "Traceback" not in err, err
        # Stdout that cannot be written (a full disk) or is closed: one
        # line and status 1, no traceback.
        with open("/dev/full", "w") as full:
            failed = subprocess.run(
                ["/usr/bin/python3", script, "--address=127.0.0.1:%d" % port,
                 "--box=0,0,50,50", "--timeout=20"],
                env=env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
        assert failed.returncode == 1, failed.stderr
        assert failed.stderr == ("scatter: cannot write the points to stdout: "
                                 "No space left on device\n"), failed.stderr
        closed = subprocess.run(
            ["/usr/bin/python3", script, "--address=127.0.0.1:%d" % port,
             "--box=0,0,50,50", "--timeout=20"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            timeout=60, preexec_fn=lambda: os.close(1))
        assert closed.returncode == 1, closed.stderr
        assert "scatter: cannot write the points: stdout is closed" in closed.stderr, \
            closed.stderr
        for flags, message in ((["--count=0"], "--count must be in [1, 2^64)"),
                               # Protobuf raised ValueError: a traceback.
                               (["--count=18446744073709551616"],
                                "--count must be in [1, 2^64)"),
                               (["--seed=-1"], "--seed must be in [0, 2^64)"),
                               (["--box=0,0,a,1"], "--box needs 4 or 6 numbers"),
                               (["--timeout=inf"], "--timeout must be > 0 s and at most 1e9 s"),
                               # No abbreviations: "ambiguous option" between
                               # the two spellings of --max_points.
                               (["--max=5"], "unrecognized arguments: --max=5"),
                               # A copy outside the repository: a protoc
                               # error and a traceback.
                               (["--proto_root=/nonexistent"],
                                "--proto_root: /nonexistent/scatter/v1/scatter.proto "
                                "not found"),
                               # Past about 2^63 ns since the epoch gRPC's
                               # deadline wrapped: DEADLINE_EXCEEDED at once.
                               (["--timeout=1e10"], "--timeout must be > 0 s and at most 1e9 s"),
                               # gRPC would dial 99999 modulo 2^16, port 34463.
                               (["--address=127.0.0.1:99999"],
                                "--address must be host:port with a port in [0, 65535]"),
                               # gRPC dialled port 0.
                               (["--address=[::1]"],
                                "--address must be host:port with a port in [0, 65535] "
                                "or unix:PATH, got '[::1]', which gRPC dials on port 0"),
                               (["--address=127.0.0.1"],
                                "--address must be host:port with a port in [0, 65535] "
                                "or unix:PATH, got '127.0.0.1', which gRPC dials on port 0"),
                               # An empty port: gRPC dialled port 0.
                               (["--address=127.0.0.1:"],
                                "got '127.0.0.1:', with no port after the colon"),
                               (["--address=[::1]:"],
                                "got '[::1]:', with no port after the colon"),
                               # Each address of a list: only the last was checked.
                               (["--address=ipv4:127.0.0.1:99999,127.0.0.1:50051"],
                                "--address must be host:port with a port in [0, 65535]"),
                               (["--address="],
                                "--address must be host:port with a port in [0, 65535] "
                                "or unix:PATH, got ''"),
                               # gRPC would read it as a host with no port.
                               (["--address=::1"],
                                "--address must be host:port with an IPv6 host in "
                                "brackets, as [::1]:PORT, got '::1'"),
                               # The port after the last colon, as scatterd
                               # splits it; the hint said [::1:50051]:PORT.
                               (["--address=::1:50051"],
                                "--address must be host:port with an IPv6 host in "
                                "brackets, as [::1]:50051, got '::1:50051'"),
                               (["--address=fe80::1%eth0"],
                                "as [fe80::1%eth0]:PORT, got 'fe80::1%eth0'"),
                               (["--address=fe80::1%eth0:50051"],
                                "as [fe80::1%eth0]:50051, got 'fe80::1%eth0:50051'")):
            bad = subprocess.run(["/usr/bin/python3", script] + flags, env=env,
                                 capture_output=True, text=True, timeout=60)
            assert bad.returncode == 2 and message in bad.stderr, (flags, bad.stderr)
        # The server's errors name request fields; the message names the
        # flag that filled it (--spacing also fills a jittered grid's
        # cell_size).
        for flags, message in (
                (["--method=jittered", "--spacing=0"],
                 "--spacing (layers[0].cell_size): must be > 0"),
                (["--spacing=-1"], "--spacing (layers[0].spacing): must be finite and > 0"),
                # A value after a space that starts with "-": argparse said
                # "expected one argument".
                (["--spacing", "-1e-3"], "--spacing (layers[0].spacing): must be finite and > 0"),
                (["--box", "-inf,0,10,10"], "--box (region.box): "),
                (["--box=0,0,0,10"], "--box (region.box): ")):
            bad = subprocess.run(["/usr/bin/python3", script, "--address=127.0.0.1:%d" % port,
                                  "--timeout=20"] + flags, env=env,
                                 capture_output=True, text=True, timeout=60)
            assert (bad.returncode == 1 and
                    bad.stderr.startswith("scatter: INVALID_ARGUMENT: " + message)), (
                        flags, bad.stderr)


def check_round_robin(pb, pb_grpc):
    """scatter_points.open_channel spreads calls over every address the
    target names, as deploy/README.md says clients do: gRPC's default,
    pick_first, sent every call to the first."""
    spec = importlib.util.spec_from_file_location(
        "scatter_points",
        os.path.join(sys.argv[2], "..", "client", "python", "scatter_points.py"))
    scatter_points = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scatter_points)
    with tempfile.TemporaryDirectory() as tmp:
        servers, logs, ports = [], [], []
        try:
            for i in range(2):
                logs.append(os.path.join(tmp, "scatterd%d.log" % i))
                with open(logs[-1], "w") as log:
                    servers.append(subprocess.Popen(
                        [sys.argv[1], "--address=127.0.0.1:0", "--metrics_address="],
                        stdout=subprocess.PIPE, stderr=log, text=True))
                ports.append(int(servers[-1].stdout.readline().split()[1]))

            def served():
                counts = []
                for path in logs:
                    with open(path) as log:
                        counts.append(log.read().count("Scatter peer="))
                return counts

            request = pb.ScatterRequest(seed=1)
            request.region.box.min.extend([0, 0])
            request.region.box.max.extend([5, 5])
            request.layers.add(id=1, spacing=1.0)
            with scatter_points.open_channel(
                    "ipv4:127.0.0.1:%d,127.0.0.1:%d" % tuple(ports)) as channel:
                stub = pb_grpc.ScatterServiceStub(channel)
                # Round robin picks among the connections that are up: the
                # first calls may all go to the server that answered first.
                calls = 0
                while min(served()) == 0 and calls < 200:
                    list(stub.Scatter(request, timeout=10))
                    calls += 1
                assert min(served()) > 0, (calls, served())
                before = served()
                for _ in range(10):
                    list(stub.Scatter(request, timeout=10))
                after = served()
                assert [a - b for a, b in zip(after, before)] == [5, 5], (before, after)
        finally:
            for server in servers:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)
                server.stdout.close()


def check_no_summary(pb, pb_grpc):
    """A stream that ends OK without its summary (a proxy between, or a
    server that is not scatterd): scatter_points.py says so in one line
    and exits 1 (it raised AttributeError, a traceback)."""
    from concurrent import futures

    class OneBatch(pb_grpc.ScatterServiceServicer):
        def Scatter(self, request, context):
            yield pb.ScatterResponse(points=pb.PointBatch(dims=2, coords=[1, 2],
                                                          layer=[0], id=[7]))

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_ScatterServiceServicer_to_server(OneBatch(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        script = os.path.join(sys.argv[2], "..", "client", "python", "scatter_points.py")
        run = subprocess.run(["/usr/bin/python3", script, "--address=127.0.0.1:%d" % port],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 1, (run.returncode, run.stderr)
        assert run.stdout == "1,2,0,7\n", run.stdout
        assert run.stderr == ("scatter: the stream ended without its summary after 1 "
                              "points (a proxy between, or not a scatterd?)\n"), run.stderr
    finally:
        server.stop(None)


def check_tls():
    """scatter_points.py against a scatterd that serves TLS (production's
    overlay serves nothing else): with --tls_ca the call succeeds; without,
    it fails with a hint, not a bare "Socket closed"; half a setup is
    refused."""
    script = os.path.join(sys.argv[2], "..", "client", "python", "scatter_points.py")
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = os.path.join(tmp, "server.pem"), os.path.join(tmp, "server.key")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
             "/CN=scatterd", "-addext", "subjectAltName=DNS:scatterd,IP:127.0.0.1",
             "-keyout", key, "-out", cert],
            check=True, capture_output=True, timeout=60)
        server = subprocess.Popen(
            [sys.argv[1], "--address=127.0.0.1:0", "--metrics_address=",
             "--tls_cert=" + cert, "--tls_key=" + key],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            port = int(server.stdout.readline().split()[1])
            address = "--address=127.0.0.1:%d" % port
            common = ["/usr/bin/python3", script, address, "--box=0,0,10,10",
                      "--timeout=20"]
            ok = subprocess.run(common + ["--tls_ca=" + cert],
                                capture_output=True, text=True, timeout=60)
            assert ok.returncode == 0, ok.stderr
            assert len(ok.stdout.splitlines()) > 10, ok.stdout
            named = subprocess.run(
                common[:2] + ["--address=localhost:%d" % port] + common[3:] +
                ["--tls_ca=" + cert, "--tls_server_name=scatterd"],
                capture_output=True, text=True, timeout=60)
            assert named.returncode == 0, named.stderr
            plain = subprocess.run(common, capture_output=True, text=True, timeout=60)
            assert plain.returncode == 1, plain.stderr
            # A CA that did not sign the server's certificate: one line, the
            # client's, without gRPC's own log line of the handshake before it.
            other, other_key = os.path.join(tmp, "other.pem"), os.path.join(tmp, "other.key")
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                 "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                 "/CN=other", "-keyout", other_key, "-out", other],
                check=True, capture_output=True, timeout=60)
            wrong = subprocess.run(common + ["--tls_ca=" + other],
                                   capture_output=True, text=True, timeout=60)
            assert wrong.returncode == 1, wrong.stderr
            assert (wrong.stderr.startswith("scatter: UNAVAILABLE: ") and
                    wrong.stderr.count("\n") == 1), wrong.stderr
            assert "UNAVAILABLE" in plain.stderr, plain.stderr
            assert "(if scatterd serves TLS, give --tls_ca)" in plain.stderr, plain.stderr
            # A server that asks for a client certificate: without one the
            # client heard a bare "Socket closed"; it now says what to give.
            mutual = subprocess.Popen(
                [sys.argv[1], "--address=127.0.0.1:0", "--metrics_address=",
                 "--tls_cert=" + cert, "--tls_key=" + key, "--tls_client_ca=" + cert],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            try:
                mutual_address = "--address=127.0.0.1:%s" % mutual.stdout.readline().split()[1]
                anonymous = subprocess.run(
                    common[:2] + [mutual_address] + common[3:] + ["--tls_ca=" + cert],
                    capture_output=True, text=True, timeout=60)
                assert anonymous.returncode == 1, anonymous.stderr
                assert ("(if scatterd asks for a client certificate, give --tls_cert "
                        "and --tls_key)") in anonymous.stderr, anonymous.stderr
                known = subprocess.run(
                    common[:2] + [mutual_address] + common[3:] +
                    ["--tls_ca=" + cert, "--tls_cert=" + cert, "--tls_key=" + key],
                    capture_output=True, text=True, timeout=60)
                assert known.returncode == 0, known.stderr
            finally:
                mutual.terminate()
                mutual.wait(timeout=30)
            # A --timeout that passes is named, with how far the call got:
            # gRPC said only "Deadline Exceeded".
            late = subprocess.run(
                common[:3] + ["--box=0,0,3000,3000", "--spacing=1", "--timeout=0.3",
                              "--tls_ca=" + cert],
                capture_output=True, text=True, timeout=60)
            assert late.returncode == 1, late.stderr
            assert ("scatter: DEADLINE_EXCEEDED: --timeout=0.3 s passed waiting for "
                    "scatterd at 127.0.0.1:%d after " % port) in late.stderr, late.stderr
            half = subprocess.run(common + ["--tls_ca=" + cert, "--tls_cert=" + cert],
                                  capture_output=True, text=True, timeout=60)
            assert half.returncode == 2, half.stderr
            assert "--tls_cert and --tls_key go together" in half.stderr, half.stderr
            missing = subprocess.run(common + ["--tls_ca=" + tmp + "/none.pem"],
                                     capture_output=True, text=True, timeout=60)
            assert missing.returncode == 2, missing.stderr
            assert "--tls_ca: cannot read" in missing.stderr, missing.stderr
            # Files that are not what their flag needs are refused in one
            # line: gRPC logged TLS errors and said "empty address list".
            other_key = os.path.join(tmp, "other.key")
            subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey",
                            "-noout", "-out", other_key],
                           check=True, capture_output=True, timeout=60)
            # A key behind a passphrase (gRPC takes none: it prompted on a
            # terminal, then failed with the encrypted key) and a CA whose
            # block is not a certificate.
            locked = os.path.join(tmp, "locked.key")
            subprocess.run(["openssl", "pkey", "-in", key, "-aes256", "-passout",
                            "pass:secret", "-out", locked],
                           check=True, capture_output=True, timeout=60)
            broken_ca = os.path.join(tmp, "broken.pem")
            with open(broken_ca, "w") as f:
                f.write("-----BEGIN CERTIFICATE-----\nnot base64\n"
                        "-----END CERTIFICATE-----\n")
            for flags, message in (
                    (["--tls_ca=" + key], "--tls_ca: %s holds no PEM CERTIFICATE block" % key),
                    (["--tls_ca=" + broken_ca],
                     "--tls_ca: %s holds no readable PEM certificate" % broken_ca),
                    (["--tls_ca=" + cert, "--tls_cert=" + cert, "--tls_key=" + cert],
                     "--tls_key: %s holds no PEM private key" % cert),
                    (["--tls_ca=" + cert, "--tls_cert=" + cert, "--tls_key=" + locked],
                     "--tls_key: %s holds no PEM private key (or one behind a "
                     "passphrase" % locked),
                    (["--tls_ca=" + cert, "--tls_cert=" + cert, "--tls_key=" + other_key],
                     "--tls_key: the key in %s does not belong to the certificate in %s"
                     % (other_key, cert))):
                bad = subprocess.run(common + flags, capture_output=True, text=True,
                                     timeout=60, stdin=subprocess.DEVNULL)
                assert bad.returncode == 2, bad.stderr
                assert message in bad.stderr, bad.stderr
                assert "empty address list" not in bad.stderr, bad.stderr
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
            server.stdout.close()


def check_no_reflection_by_default(scatterd_path, reflection_pb2, reflection_pb2_grpc):
    """Without --reflection, scatterd does not answer it: each open
    reflection stream held a handler thread, and 50 idle ones left none for
    Scatter calls."""
    plain = subprocess.Popen([scatterd_path, "--address=127.0.0.1:0", "--metrics_address="],
                             stdout=subprocess.PIPE, text=True)
    try:
        port = int(plain.stdout.readline().split()[1])
        with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            try:
                list(stub.ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                    timeout=10))
                raise AssertionError("reflection answered without --reflection")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.UNIMPLEMENTED, e.code()
    finally:
        plain.send_signal(signal.SIGTERM)
        assert plain.wait(timeout=30) == 0


def main():
    scatterd = subprocess.Popen([sys.argv[1], "--address=127.0.0.1:0", "--metrics_address=",
                                 "--reflection"],
                                stdout=subprocess.PIPE, text=True)
    try:
        port = int(scatterd.stdout.readline().split()[1])
        with tempfile.TemporaryDirectory() as out:
            generate(out)
            from scatter.v1 import scatter_pb2 as pb, scatter_pb2_grpc as pb_grpc
            from grpc.health.v1 import health_pb2, health_pb2_grpc
            from grpc.reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

            channel = grpc.insecure_channel("127.0.0.1:%d" % port)
            stub = pb_grpc.ScatterServiceStub(channel)
            request = pb.ScatterRequest(seed=5)
            request.region.box.min.extend([0, 0])
            request.region.box.max.extend([50, 50])
            request.layers.add(id=3, spacing=1.0)
            coords, ids, summary = [], [], None
            for response in stub.Scatter(request, timeout=30):
                if response.HasField("points"):
                    assert response.points.dims == 2
                    coords.extend(response.points.coords)
                    ids.extend(response.points.id)
                    assert list(response.points.layer) == [3] * len(response.points.id)
                else:
                    summary = response.summary
            n = len(ids)
            assert summary is not None and summary.total_points == n, (summary, n)
            assert len(coords) == 2 * n
            # Dense packing: about 0.87 / r^2 points per unit area.
            assert 0.8 * 2500 < n < 1.2 * 0.87 * 2500 * 1.1, n
            assert all(0 <= c < 50 for c in coords)
            assert check_min_distance(coords, 1.0)
            assert len(set(ids)) == n

            bad = pb.ScatterRequest()
            bad.region.box.min.extend([0, 0])
            bad.region.box.max.extend([1, 1])
            bad.layers.add(spacing=float("nan"))
            try:
                list(stub.Scatter(bad, timeout=10))
                raise AssertionError("a NaN spacing was accepted")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e.code()
                assert "layers[0].spacing" in e.details(), e.details()

            health = health_pb2_grpc.HealthStub(channel)
            reply = health.Check(health_pb2.HealthCheckRequest(
                service="scatter.v1.ScatterService"), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING

            reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
            answers = reflection.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10)
            names = [s.name for a in answers for s in a.list_services_response.service]
            assert "scatter.v1.ScatterService" in names, names
            # Every service it lists resolves to its file, the health
            # service too (gRPC's own serves it without descriptors; they
            # said "Symbol not found", and grpcurl could not call it).
            for name in names:
                found = list(reflection.ServerReflectionInfo(
                    iter([reflection_pb2.ServerReflectionRequest(
                        file_containing_symbol=name)]), timeout=10))
                assert len(found) == 1, (name, found)
                assert found[0].HasField("file_descriptor_response"), (name, found[0])
            channel.close()
            check_no_reflection_by_default(sys.argv[1], reflection_pb2, reflection_pb2_grpc)
            check_points_script(port)
            check_round_robin(pb, pb_grpc)
            check_no_summary(pb, pb_grpc)
            check_tls()
            print("python client: %d points, min distance holds, health SERVING, "
                  "reflection lists %s; scatter_points.py works, TLS too" % (n, ", ".join(sorted(names))))
    finally:
        scatterd.send_signal(signal.SIGTERM)
        code = scatterd.wait(timeout=30)
    assert code == 0, code
    return 0


if __name__ == "__main__":
    sys.exit(main())
