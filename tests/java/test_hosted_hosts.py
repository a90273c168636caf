"""The hosts of issue 31, each for real: a Java application that its own host starts boots the isthmus
runtime in process on the first Isthmus.get() (JDK 22+) and runs ops on the device, checked against
NumPy here: `java -jar` of a shaded jar, a Spring Boot repackaged jar (io.isthmus in a nested jar, loaded
by Boot's own class loader), Maven surefire with no <jvm> setting, JShell, and a Spark local-mode job
whose executor tasks score their DataFrame partition.

Every project is built once per session in one folder (the same Java sources, tests/java/hosts/app);
Maven builds against a repository of their own (kept in the user's cache, one per checkout) where
`isthmus maven-install` put io.isthmus (with io.isthmus:jpype-support) this session, taking other
artifacts from ~/.m2 when there, else from Maven Central. Spark comes from the pyspark sdist (its jars
and spark-submit), downloaded once into the user's cache.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from _hosted_support import csv, hosted_env, isthmus_jar, java_homes

pytestmark = pytest.mark.xdist_group("jvm")

SOURCES = Path(__file__).resolve().parent / "hosts" / "app"
JDK = next((h for v, h in java_homes() if v >= 22 and (h / "bin" / "javac").is_file()), None)
needs_jdk = pytest.mark.skipif(JDK is None, reason="needs a JDK 22+ (javac and the FFM API)")
NATIVE = "--enable-native-access=ALL-UNNAMED"
SPARK = "4.3.0"  # the first Spark whose jars run on JDK 25 here (hosted mode needs 22+)
SHADE, SUREFIRE, COMPILER, BOOT, JUNIT = "3.6.2", "3.5.2", "3.14.0", "4.0.7", "5.14.1"


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "isthmus-tests"


def _run(cmd, *, cwd, env, timeout=600):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return r


def _fail(what, r) -> str:
    return f"{what} exited {r.returncode}:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    """The session's folder: a Maven repository with io.isthmus installed by `isthmus maven-install`,
    settings that read ~/.m2 as a cache, and the environment of the hosted JVMs."""
    if JDK is None:
        pytest.skip("needs a JDK 22+ (javac and the FFM API)")
    if isthmus_jar() is None:
        pytest.skip("needs the isthmus jar (make jar)")
    root = tmp_path_factory.mktemp("hosts")
    # the projects' own Maven repository, kept between sessions (Spring Boot's artifacts are downloaded once),
    # one per checkout: io.isthmus 0.1.0 is this checkout's, installed anew each session
    checkout = hashlib.sha256(str(Path(__file__).resolve().parents[2]).encode()).hexdigest()[:12]
    repo = _cache() / f"m2-{checkout}"
    home = root / "home"  # maven-install records the interpreter there, not in the user's home
    home.mkdir()
    r = _run([sys.executable, "-m", "isthmus.cli", "maven-install", "--repo", repo], cwd=root,
             env={**os.environ, "HOME": str(home)}, timeout=300)
    assert r.returncode == 0, _fail("isthmus maven-install", r)
    cache = Path.home() / ".m2" / "repository"
    settings = root / "settings.xml"
    repos = "".join(
        f"<{kind}><{one}><id>home-m2</id><url>{cache.as_uri()}</url><releases><checksumPolicy>ignore"
        f"</checksumPolicy></releases><snapshots><enabled>false</enabled></snapshots></{one}></{kind}>"
        for kind, one in (("repositories", "repository"), ("pluginRepositories", "pluginRepository")))
    settings.write_text(f"<settings><profiles><profile><id>cache</id>{repos}</profile></profiles>"
                        "<activeProfiles><activeProfile>cache</activeProfile></activeProfiles></settings>")
    x = np.random.default_rng().standard_normal(29).astype(np.float32)
    env = hosted_env(JAVA_HOME=str(JDK), HOME=str(home), ISTHMUS_TEST_X=csv(x), SPARK_LOCAL_IP="127.0.0.1",
                     PATH=f"{JDK / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    return {"root": root, "repo": repo, "settings": settings, "env": env, "x": x, "projects": {}}


def _mvn(work, project: Path, *goals, timeout=600):
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.skip("needs Maven (mvn) on PATH")
    return _run([mvn, "-B", "-ntp", "-q", "-Dstyle.color=never", "-s", work["settings"], f"-Dmaven.repo.local={work['repo']}", *goals],
                cwd=project, env=work["env"], timeout=timeout)


def _project(work, name: str, pom: str, sources: list[str], tests: list[str] = ()) -> Path:
    folder = work["root"] / name
    main = folder / "src" / "main" / "java" / "app"
    main.mkdir(parents=True)
    for s in sources:
        shutil.copy(SOURCES / s, main / s)
    if tests:
        test = folder / "src" / "test" / "java" / "app"
        test.mkdir(parents=True)
        for s in tests:
            shutil.copy(SOURCES / s, test / s)
    (folder / "pom.xml").write_text(pom)
    return folder


def _pom(artifact: str, *, parent: str = "", dependencies: str = "", plugins: str = "") -> str:
    from isthmus._version import __version__

    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>{parent}
  <groupId>test.hosts</groupId>
  <artifactId>{artifact}</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>io.isthmus</groupId><artifactId>isthmus</artifactId><version>{__version__}</version></dependency>
    {dependencies}
  </dependencies>
  <build><plugins>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId>
      <version>{COMPILER}</version></plugin>
    {plugins}
  </plugins></build>
</project>
"""


def _check(out: str, x: np.ndarray, loader: str) -> None:
    """The lines of app.Check: sum and softmax from the caller, a plain Java thread, an executor thread."""
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)  # Maven's colours around a forked JVM's output
    x64 = x.astype(np.float64)
    ref = np.exp(x64 - x64.max())
    ref /= ref.sum()
    for where in ("caller", "thread", "executor"):
        m = re.search(rf"^check {where} sum (\S+) softmax (.*)$", out, re.M)
        assert m, f"no line from the {where}:\n{out[-3000:]}"
        assert np.isclose(float(m.group(1)), x64.sum(), rtol=1e-5, atol=1e-6 * np.abs(x64).sum()), m.group(0)
        np.testing.assert_allclose([float(v) for v in m.group(2).split()], ref, rtol=1e-5, atol=1e-7)
    m = re.search(r"^loader (\S+) live (\d+)$", out, re.M)
    assert m and m.group(1).endswith(loader) and m.group(2) == "0", out[-3000:]


def _no_crash(folder: Path, r) -> None:
    assert not list(folder.rglob("hs_err_pid*.log")), r.stdout[-3000:]
    assert "SIGSEGV" not in r.stderr and "fatal error" not in r.stderr.lower(), r.stderr[-3000:]


# ---- java -jar of a shaded jar -----------------------------------------------------------------
@needs_jdk
def test_java_jar_of_a_shaded_jar(work):
    shade = f"""<plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-shade-plugin</artifactId>
      <version>{SHADE}</version>
      <executions><execution><phase>package</phase><goals><goal>shade</goal></goals><configuration>
        <transformers><transformer implementation="org.apache.maven.plugins.shade.resource.ManifestResourceTransformer">
          <mainClass>app.Main</mainClass>
          <manifestEntries><Enable-Native-Access>ALL-UNNAMED</Enable-Native-Access></manifestEntries>
        </transformer></transformers>
      </configuration></execution></executions></plugin>"""
    folder = _project(work, "shaded", _pom("shaded", plugins=shade), ["Check.java", "Main.java"])
    r = _mvn(work, folder, "package")
    assert r.returncode == 0, _fail("mvn package (shade)", r)
    jar = folder / "target" / "shaded-1.jar"
    # one jar: the application, io.isthmus and JPype's support classes (through io.isthmus:jpype-support)
    names = subprocess.run([JDK / "bin" / "jar", "tf", jar], capture_output=True, text=True).stdout.split()
    assert {"app/Main.class", "io/isthmus/Isthmus.class", "org/jpype/JPypeContext.class"} <= set(names)
    r = _run([JDK / "bin" / "java", "-jar", jar], cwd=folder, env=work["env"], timeout=300)
    assert r.returncode == 0, _fail("java -jar shaded-1.jar", r)
    _check(r.stdout, work["x"], "AppClassLoader")
    assert "WARNING" not in r.stderr  # the manifest's Enable-Native-Access: the JDK has nothing to say
    _no_crash(folder, r)


# ---- Spring Boot ---------------------------------------------------------------------------------
@needs_jdk
def test_spring_boot_repackaged_jar(work):
    """io.isthmus and org.jpype are nested jars (BOOT-INF/lib) that only Boot's LaunchedClassLoader sees:
    Python finds io.isthmus through it, JPype's classes are defined in the system class loader."""
    parent = f"""
  <parent><groupId>org.springframework.boot</groupId><artifactId>spring-boot-starter-parent</artifactId>
    <version>{BOOT}</version><relativePath/></parent>"""
    deps = "<dependency><groupId>org.springframework.boot</groupId><artifactId>spring-boot-starter</artifactId></dependency>"
    plugin = """<plugin><groupId>org.springframework.boot</groupId><artifactId>spring-boot-maven-plugin</artifactId>
      <configuration><mainClass>app.BootApp</mainClass></configuration></plugin>"""
    folder = _project(work, "boot", _pom("boot", parent=parent, dependencies=deps, plugins=plugin),
                      ["Check.java", "BootApp.java"])
    r = _mvn(work, folder, "package")
    assert r.returncode == 0, _fail("mvn package (spring-boot repackage)", r)
    jar = folder / "target" / "boot-1.jar"
    names = subprocess.run([JDK / "bin" / "jar", "tf", jar], capture_output=True, text=True).stdout.split()
    assert any(re.match(r"BOOT-INF/lib/isthmus-.*\.jar$", n) for n in names), names
    assert any(re.match(r"BOOT-INF/lib/jpype-support-.*\.jar$", n) for n in names), names
    r = _run([JDK / "bin" / "java", NATIVE, "-jar", jar], cwd=folder, env=work["env"], timeout=300)
    assert r.returncode == 0, _fail("java -jar boot-1.jar", r)
    _check(r.stdout, work["x"], "LaunchedClassLoader")
    _no_crash(folder, r)


# ---- Maven surefire --------------------------------------------------------------------------------
@needs_jdk
def test_maven_surefire_with_no_jvm_setting(work):
    deps = (f"<dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId>"
            f"<version>{JUNIT}</version><scope>test</scope></dependency>")
    plugin = f"""<plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-surefire-plugin</artifactId>
      <version>{SUREFIRE}</version></plugin>"""
    folder = _project(work, "surefire", _pom("surefire", dependencies=deps, plugins=plugin), ["Check.java"],
                      ["CheckTest.java"])
    r = _mvn(work, folder, "test")
    assert r.returncode == 0, _fail("mvn test", r)
    report = (folder / "target" / "surefire-reports" / "app.CheckTest.txt").read_text()
    assert "Tests run: 1, Failures: 0, Errors: 0, Skipped: 0" in report, report
    _check(r.stdout, work["x"], "AppClassLoader")  # surefire's class path: a manifest-only jar on -cp
    _no_crash(folder, r)


# ---- JShell ------------------------------------------------------------------------------------------
@needs_jdk
@pytest.mark.skipif(JDK is None or not (JDK / "bin" / "jshell").is_file(),
                    reason="this Java runtime has no jshell (a JRE linked without jdk.jshell: the GPU machine's)")
def test_jshell_script(work):
    from isthmus.java import hosted

    folder = work["root"] / "jshell"
    classes = folder / "classes"
    jar = isthmus_jar()
    r = _run([JDK / "bin" / "javac", "--release", "17", "-cp", jar, "-d", classes, SOURCES / "Check.java"],
             cwd=work["root"], env=work["env"], timeout=300)
    assert r.returncode == 0, _fail("javac", r)
    script = folder / "check.jsh"
    script.write_text("for (String line : app.Check.all()) System.out.println(line);\n/exit\n")
    cp = os.pathsep.join(map(str, [jar, hosted.jpype_jar(), classes]))
    r = _run([JDK / "bin" / "jshell", "--class-path", cp, f"-R{NATIVE}", script], cwd=folder, env=work["env"],
             timeout=300)
    assert r.returncode == 0, _fail("jshell", r)
    _check(r.stdout, work["x"], "AppClassLoader")  # jshell's execution JVM, its class path
    _no_crash(folder, r)


# ---- Spark -------------------------------------------------------------------------------------------
def _spark_home() -> Path:
    """Spark's jars and launch scripts, from the pyspark sdist (the `deps` folder), kept in the user's
    cache: pyspark when installed, else downloaded and unpacked once."""
    try:
        import pyspark

        home = Path(pyspark.__file__).parent
        if (home / "bin" / "spark-submit").is_file() and pyspark.__version__ == SPARK:
            return home
    except ImportError:
        pass
    cache = _cache() / f"spark-{SPARK}"
    home = cache / "deps"
    if (home / "bin" / "spark-submit").is_file():
        return home
    cache.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "-d", cache, f"pyspark=={SPARK}"], capture_output=True, text=True, timeout=900)
    sdist = cache / f"pyspark-{SPARK}.tar.gz"
    if r.returncode != 0 or not sdist.is_file():
        pytest.skip(f"Spark could not be had: pip download pyspark=={SPARK} failed: {r.stderr.strip()[-500:]}")
    part = cache / ".unpacking"
    shutil.rmtree(part, ignore_errors=True)
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(f"pyspark-{SPARK}/deps/")
                   and m.name.split("/")[2] in ("bin", "jars", "conf")]
        tar.extractall(part, members=members, filter="tar")
    (part / f"pyspark-{SPARK}" / "deps").rename(home)
    shutil.rmtree(part, ignore_errors=True)
    sdist.unlink()
    return home


@needs_jdk
def test_spark_local_job_scores_partitions_in_executor_tasks(work):
    from isthmus.java import hosted

    spark = _spark_home()
    folder = work["root"] / "spark"
    classes = folder / "classes"
    jar = isthmus_jar()
    r = _run([JDK / "bin" / "javac", "--release", "17", "-cp", os.pathsep.join([str(jar), str(spark / "jars" / "*")]),
              "-d", classes, SOURCES / "Check.java", SOURCES / "SparkScore.java"], cwd=work["root"],
             env=work["env"], timeout=300)
    assert r.returncode == 0, _fail("javac", r)
    app = folder / "app.jar"
    r = _run([JDK / "bin" / "jar", "cf", app, "-C", classes, "."], cwd=folder, env=work["env"])
    assert r.returncode == 0, _fail("jar", r)
    rng = np.random.default_rng()
    rows, k = 157, 5
    feats = rng.standard_normal((rows, k))
    w = rng.standard_normal(k).astype(np.float32)
    ids = rng.permutation(10_000)[:rows]
    (folder / "in.csv").write_text("id," + ",".join(f"f{j}" for j in range(k)) + "\n" + "".join(
        f"{i}," + ",".join(repr(float(v)) for v in row) + "\n" for i, row in zip(ids, feats)))
    out = folder / "scores.txt"
    env = {**work["env"], "SPARK_HOME": str(spark)}
    r = _run([spark / "bin" / "spark-submit", "--master", "local[2]", "--driver-java-options", NATIVE,
              "--jars", f"{jar},{hosted.jpype_jar()}", "--class", "app.SparkScore", app, folder / "in.csv", out,
              csv(w)], cwd=folder, env=env, timeout=400)
    assert r.returncode == 0, _fail("spark-submit", r)
    # the application's classes and io.isthmus: Spark's class loader for --jars, not the system one
    assert re.search(r"^loader org\.apache\.spark\.util\.MutableURLClassLoader live 0$", r.stdout, re.M), r.stdout
    got = {}
    threads = set()
    for line in out.read_text().splitlines():
        i, score, thread = line.split(",", 2)
        got[int(i)] = float(score)
        threads.add(thread)
    assert sorted(got) == sorted(ids.tolist())  # every row scored once
    ref = feats.astype(np.float32).astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose([got[i] for i in ids], ref, rtol=1e-4, atol=1e-5)
    assert threads and all(t.startswith("Executor task launch worker") for t in threads), threads
    _no_crash(folder, r)


# ---- Gradle ------------------------------------------------------------------------------------------
def _gradle_version(env) -> tuple[int, ...] | None:
    gradle = shutil.which("gradle")
    if gradle is None:
        return None
    r = subprocess.run([gradle, "--version", "--no-daemon"], capture_output=True, text=True, env=env, timeout=300)
    m = re.search(r"^Gradle (\d+)\.(\d+)", r.stdout, re.M)
    return tuple(map(int, m.groups())) if m else (0,)


@needs_jdk
def test_gradle_test_jvm_with_no_jvm_setting(work):
    """Gradle runs on the JDK 22+ (JAVA_HOME) and forks its test JVM on it: no toolchain, no executable.
    Needs a Gradle that runs on that JDK (8.8+ for 22, 9.1+ for 25). The registries this project reaches
    serve none: Debian's gradle is 4.4.1, which runs on JDK 17 only, and its test worker installs a
    SecurityManager, which JDK 24+ refuses (UnsupportedOperationException)."""
    version = _gradle_version(work["env"])
    if version is None or version < (8, 8):
        pytest.skip(f"needs Gradle 8.8+ (a Gradle that runs on JDK 22+) on PATH; found "
                    f"{'none' if version is None else '.'.join(map(str, version))}: Debian serves 4.4.1 only, and "
                    "Gradle's distributions are not served by the registries reachable here")
    from isthmus.java import hosted

    folder = _project(work, "gradle", "", ["Check.java"], ["CheckTest.java"])
    (folder / "pom.xml").unlink()
    (folder / "settings.gradle").write_text("rootProject.name = 'hosted'\n")
    (folder / "build.gradle").write_text(f"""plugins {{ id 'java' }}
repositories {{ maven {{ url = uri('{(Path.home() / '.m2' / 'repository').as_uri()}') }}; mavenCentral() }}
dependencies {{
    implementation files('{isthmus_jar()}')
    runtimeOnly files('{hosted.jpype_jar()}')
    testImplementation 'org.junit.jupiter:junit-jupiter:{JUNIT}'
    testRuntimeOnly 'org.junit.platform:junit-platform-launcher'
}}
test {{ useJUnitPlatform(); testLogging {{ showStandardStreams = true }} }}
""")
    r = _run([shutil.which("gradle"), "--no-daemon", "-q", "--console=plain", "test"], cwd=folder, env=work["env"],
             timeout=600)
    assert r.returncode == 0, _fail("gradle test", r)
    _check(r.stdout, work["x"], "AppClassLoader")
    _no_crash(folder, r)
