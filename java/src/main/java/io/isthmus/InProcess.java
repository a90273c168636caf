package io.isthmus;

import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandle;
import java.lang.reflect.Array;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Boots the isthmus runtime inside a JVM that its own host started ({@code java -jar}, a build
 * tool's test JVM, Spring Boot, Spark executors), on JDK 22 and later: {@link Isthmus#get()}
 * calls {@link #boot()} when no runtime is attached.
 *
 * <p>Steps: find the Python environment holding isthmus ({@code -Disthmus.python},
 * {@code ISTHMUS_PYTHON}, else the one {@code isthmus jvm-home} or {@code isthmus maven-install}
 * recorded in {@code ~/.isthmus/python}); ask it once what an embedding needs
 * ({@code python -m isthmus.java.hosted describe}: libpython, module path, the native stand-in for
 * libjvm), cached per interpreter; load libpython with {@code RTLD_NOW | RTLD_GLOBAL} through a
 * downcall to libc's {@code dlopen} (extension modules resolve CPython's symbols globally, and the
 * FFM library lookup is local); {@code Py_InitializeEx(0)} (no Python signal handlers: the JVM
 * keeps SIGTERM and SIGINT); run {@code isthmus.java.hosted.boot}, which starts JPype on a Python
 * thread against this JVM and attaches the runtime as {@code isthmus.java.start()} does; then
 * {@code PyEval_SaveThread}, so any Java thread can take the GIL. Before that, the stand-in opens
 * {@code java.lang} to unnamed modules through JNI (as the {@code --add-opens} that
 * {@code isthmus java} passes), so {@link ShutdownOrder} runs the runtime's shutdown step after the
 * application's hooks.
 *
 * <p>Where io.isthmus came from a class loader of the application's host (Spring Boot's nested jars,
 * Spark's {@code --jars}, a plugin loader), Python looks classes up through that loader, and the
 * installed JPype's classes, which JPype's native part looks for in the system class loader, are
 * defined there by the stand-in (JNI {@code DefineClass}) when the class path lacks them.
 *
 * <p>The Foreign Function & Memory API is final in JDK 22, and this artifact targets Java 17: it is
 * reached by reflection here, so one class file serves both (on 17-21 this class is never asked
 * to boot). A multi-release jar would need a JDK 22+ to build the artifact; reflection keeps the
 * build on any JDK 17+, and the dozen calls made once per process cost nothing that matters.
 */
final class InProcess {
    static final String PROPERTY = "isthmus.python";
    static final String ENV = "ISTHMUS_PYTHON";
    static final int MIN_FEATURE = 22;
    private static final String JPYPE_PROBE = "org/jpype/JPypeContext.class";

    private static final Object LOCK = new Object();
    /** Set once CPython was loaded into this process: it cannot be loaded or booted again. */
    private static String failed;
    private static boolean booted;

    private InProcess() {
    }

    /** What a plain JVM on JDK 17-21 is told. */
    static String beforeJdk22(int feature) {
        return Isthmus.HOW_TO_LAUNCH + ". On JDK " + MIN_FEATURE + " or later, Isthmus.get() also boots the runtime "
                + "in a JVM started by any host (java -jar, Maven or Gradle test JVMs, Spring Boot, Spark), with "
                + "-Disthmus.python=PATH or ISTHMUS_PYTHON naming the Python that has isthmus installed; this JVM is "
                + "Java " + feature;
    }

    /**
     * Boots the runtime in this process once; every caller waits for the one boot.
     *
     * @return the attached runtime
     * @throws NotAttachedException if it cannot boot here; the message says why and what to do
     */
    static Isthmus boot() {
        synchronized (LOCK) {
            Isthmus attached = Isthmus.attached();
            if (attached != null) {
                return attached;
            }
            int feature = Runtime.version().feature();
            if (feature < MIN_FEATURE) {
                throw new NotAttachedException(beforeJdk22(feature));
            }
            if (booted || "python".equals(System.getProperty("isthmus.host"))) {
                throw new NotAttachedException("the isthmus runtime of this JVM has detached: the JVM is shutting "
                        + "down, or the Python that started it called isthmus.java.shutdown()");
            }
            if (failed != null) {
                throw new NotAttachedException(failed);
            }
            Ffm ffm = Ffm.load();
            if (ffm.pythonRunning()) {
                throw new NotAttachedException(Isthmus.HOW_TO_LAUNCH + ". A Python interpreter already runs in this "
                        + "process (this JVM was started by Python, as isthmus.java.start() or JPype do) but no "
                        + "isthmus runtime is attached; call isthmus.java.start() in that Python");
            }
            Description d = Description.of(python());
            Loaders loaders = checkClassPath(d);
            // java.lang opened as `isthmus java` opens it (--add-opens): the runtime's shutdown step then runs
            // after the application's hooks (ShutdownOrder); without, a thread calling the runtime while the JVM
            // shuts down could enter the bridge after it closed (SIGSEGV in JPype's native part)
            ffm.openJavaLang(d.one("standin"));
            ShutdownOrder.keepInPlace(ShutdownOrder.applicationHooks());  // the application's own stay put
            Thread self = Thread.currentThread();
            ClassLoader context = self.getContextClassLoader();
            try {
                self.setContextClassLoader(Isthmus.class.getClassLoader());  // what Python reads (hosted.boot)
                bootPython(ffm, d, loaders);
            } catch (NotAttachedException e) {
                failed = e.getMessage();
                throw e;
            } finally {
                self.setContextClassLoader(context);
            }
            booted = true;
            attached = Isthmus.attached();
            if (attached == null) {
                failed = "the isthmus runtime booted in this JVM but did not attach (see the output above)";
                throw new NotAttachedException(failed);
            }
            return attached;
        }
    }

    /** The home folder as Python's {@code expanduser} finds it ({@code HOME} first), where the record is. */
    static String home() {
        String home = System.getenv("HOME");
        return home != null && !home.isBlank() ? home : System.getProperty("user.home");
    }

    /** The interpreter named by the property, the environment, or the record; checked to exist. */
    static Path python() {
        String named = System.getProperty(PROPERTY);
        String from = "-D" + PROPERTY;
        if (named == null || named.isBlank()) {
            named = System.getenv(ENV);
            from = ENV;
        }
        if (named == null || named.isBlank()) {
            Path record = Paths.get(home(), ".isthmus", "python");
            try {
                named = Files.readString(record).strip();
                from = record.toString();
            } catch (IOException e) {
                throw new NotAttachedException(Isthmus.HOW_TO_LAUNCH + ". To boot the runtime inside this JVM "
                        + "(JDK " + MIN_FEATURE + "+), name the Python that has isthmus installed: -D" + PROPERTY
                        + "=PATH or " + ENV + "=PATH (e.g. .venv/bin/python), or run `isthmus maven-install` or "
                        + "`isthmus jvm-home` once with it (they record it in " + record + ")");
            }
        }
        Path path = Paths.get(named);
        if (!Files.isExecutable(path)) {
            boolean recorded = !from.equals(ENV) && !from.startsWith("-D");
            throw new NotAttachedException("the Python named by " + from + " (" + named + ") is not an executable "
                    + "file; name the interpreter of the environment that has isthmus installed (e.g. "
                    + ".venv/bin/python)" + (recorded ? " with -D" + PROPERTY + "=PATH or " + ENV + "=PATH, or run "
                    + "`isthmus maven-install` or `isthmus jvm-home` again with it (they record it there); "
                    + Isthmus.HOW_TO_LAUNCH : ""));
        }
        return path.toAbsolutePath();
    }

    /** Where the io.isthmus and org.jpype classes of this JVM are, as the boot needs to know. */
    static final class Loaders {
        /** io.isthmus came from a loader of the application's host, not the system class loader. */
        final boolean hostLoader;
        /** org.jpype is not on the system class loader: the boot defines the installed JPype's there. */
        final boolean defineJpype;

        Loaders(boolean hostLoader, boolean defineJpype) {
            this.hostLoader = hostLoader;
            this.defineJpype = defineJpype;
        }
    }

    /**
     * JPype's native start finds its support classes (org.jpype.jar) through the system class loader,
     * and Python finds io.isthmus there unless told otherwise. On a flat class path both are there.
     * Where a host nests jars or loads the application with its own loader (Spring Boot's
     * {@code BOOT-INF/lib}, JShell, Spark's {@code --jars}), io.isthmus is looked up through the
     * loader that loaded it (the boot thread's context class loader), and the org.jpype classes,
     * found beside it, are defined in the system class loader from the installed JPype's jar; they
     * must be that JPype's either way.
     */
    private static Loaders checkClassPath(Description d) {
        ClassLoader system = ClassLoader.getSystemClassLoader();
        ClassLoader own = Isthmus.class.getClassLoader();
        Class<?> seen;
        try {
            seen = Class.forName(Isthmus.class.getName(), false, system);
        } catch (ClassNotFoundException e) {
            seen = null;
        }
        boolean hostLoader = seen != Isthmus.class;
        if (hostLoader && seen != null) {
            throw new NotAttachedException("io.isthmus is on this JVM's class path and also in " + own + ", which "
                    + "loaded the copy this application uses: keep one (remove the isthmus jar from -cp, or from "
                    + "the application's own jars)");
        }
        URL probe = system.getResource(JPYPE_PROBE);
        boolean define = false;
        if (probe == null && hostLoader && own != null) {
            probe = own.getResource(JPYPE_PROBE);
            define = probe != null;
        }
        String jar = d.one("jpype_jar");
        if (probe == null) {
            throw new NotAttachedException("JPype's Java support classes (org.jpype.jar) are not on this JVM's class "
                    + "path: depend on io.isthmus:isthmus as installed by `isthmus maven-install` (its pom brings "
                    + "io.isthmus:jpype-support, the org.jpype.jar of the installed JPype " + d.one("jpype")
                    + "), or add " + jar + " to -cp");
        }
        String found;
        try (InputStream in = probe.openStream()) {
            found = hex(MessageDigest.getInstance("SHA-256").digest(in.readAllBytes()));
        } catch (IOException | NoSuchAlgorithmException e) {
            throw new NotAttachedException("cannot read " + probe + ": " + e);
        }
        if (!found.equals(d.one("jpype_sha256"))) {
            throw new NotAttachedException("the org.jpype classes on this JVM's class path (" + probe + ") are not "
                    + "those of the JPype " + d.one("jpype") + " installed with " + d.one("python") + " (" + jar
                    + "): run `isthmus maven-install` again and rebuild the application, or put " + jar + " on -cp");
        }
        return new Loaders(hostLoader, define);
    }

    private static void bootPython(Ffm ffm, Description d, Loaders loaders) {
        String lib = d.one("libpython");
        Object handle = ffm.dlopen(lib);
        String version = ffm.string(ffm.call("Py_GetVersion", handle, Ffm.PTR));
        if (!version.startsWith(d.one("version") + " ")) {
            d.forget();
            throw new NotAttachedException(lib + " is Python " + version.split(" ")[0] + " but " + d.one("python")
                    + " is " + d.one("version") + "; the environment changed since it was described: run the "
                    + "application again");
        }
        String home = d.one("home");
        if (!d.one("exec_home").equals(home)) {
            home = home + ":" + d.one("exec_home");
        }
        String before = System.getenv("PYTHONHOME");
        ffm.setenv("PYTHONHOME", home);
        ffm.call("Py_InitializeEx", handle, Ffm.VOID, 0);
        if (before == null) {
            ffm.unsetenv("PYTHONHOME"); // the embedded interpreter has its paths; children must not inherit it
        } else {
            ffm.setenv("PYTHONHOME", before);
        }
        Path result;
        try {
            result = Files.createTempFile("isthmus-boot", ".txt");
        } catch (IOException e) {
            throw new NotAttachedException("cannot create a temporary file for the boot's result: " + e);
        }
        try {
            int rc = (Integer) ffm.call("PyRun_SimpleString", handle, Ffm.INT, ffm.cString(bootstrap(d, result, loaders)));
            ffm.call("PyEval_SaveThread", handle, Ffm.PTR);
            String text = Files.readString(result);
            if (rc != 0 || !text.startsWith("ok")) {
                throw new NotAttachedException("booting the isthmus runtime in this JVM with " + d.one("python")
                        + " failed: " + (text.isEmpty() ? "(no result; see the output above)" : text.strip()));
            }
        } catch (IOException e) {
            throw new NotAttachedException("cannot read the boot's result " + result + ": " + e);
        } finally {
            try {
                Files.deleteIfExists(result);
            } catch (IOException ignored) {
                // a temporary file
            }
        }
    }

    private static String py(String s) {
        return "bytes.fromhex('" + hex(s.getBytes(StandardCharsets.UTF_8)) + "').decode()";
    }

    /** The Python run in the embedded interpreter: the environment's module path, then the boot. */
    private static String bootstrap(Description d, Path result, Loaders loaders) {
        StringBuilder paths = new StringBuilder();
        for (String p : d.all("path")) {
            paths.append(py(p)).append(", ");
        }
        StringBuilder sites = new StringBuilder();
        for (String p : d.all("site")) {
            sites.append(py(p)).append(", ");
        }
        return "import sys\n"
                + "try:\n"
                + "    sys.path[:] = [" + paths + "]\n"
                + "    import site\n"
                + "    for _d in [" + sites + "]:\n"
                + "        site.addsitedir(_d)\n"
                + "    sys.executable = " + py(d.one("python")) + "\n"
                + "    sys.argv = ['']\n"
                + "    from isthmus.java import hosted as _hosted\n"
                + "    _hosted.boot(" + py(d.one("standin")) + ", " + (loaders.defineJpype ? py(d.one("jpype_jar")) : "''")
                + ", " + (loaders.hostLoader ? "True" : "False") + ")\n"
                + "    _r = 'ok'\n"
                + "except BaseException as _e:\n"
                + "    import traceback\n"
                + "    _r = type(_e).__name__ + ': ' + str(_e) + '\\n' + traceback.format_exc()\n"
                + "with open(" + py(result.toString()) + ", 'w') as _f:\n"
                + "    _f.write(_r)\n";
    }

    static String hex(byte[] bytes) {
        StringBuilder s = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            s.append(Character.forDigit((b >> 4) & 0xF, 16)).append(Character.forDigit(b & 0xF, 16));
        }
        return s.toString();
    }

    /** What the interpreter said about itself ({@code python -m isthmus.java.hosted describe}), cached. */
    static final class Description {
        private final Map<String, List<String>> lines;
        private final Path cache;

        private Description(Map<String, List<String>> lines, Path cache) {
            this.lines = lines;
            this.cache = cache;
        }

        String one(String key) {
            List<String> v = lines.get(key);
            return v == null || v.isEmpty() ? "" : v.get(0);
        }

        List<String> all(String key) {
            return lines.getOrDefault(key, List.of());
        }

        void forget() {
            try {
                Files.deleteIfExists(cache);
            } catch (IOException ignored) {
                // asked again next time anyway when stale
            }
        }

        static Path cacheFolder() {
            String dir = System.getenv("ISTHMUS_CACHE_DIR");
            if (dir != null && !dir.isBlank()) {
                return Paths.get(dir.replaceFirst("^~", home()), "hosted");
            }
            String home = home();
            if (System.getProperty("os.name", "").startsWith("Mac")) {
                return Paths.get(home, "Library", "Caches", "isthmus", "hosted");
            }
            String xdg = System.getenv("XDG_CACHE_HOME");
            return Paths.get(xdg != null && !xdg.isBlank() ? xdg : home + "/.cache", "isthmus", "hosted");
        }

        /** The stamp a cached description is valid for: the interpreter and its libpython, unchanged. */
        private static String stamp(Path python, Map<String, List<String>> lines) throws IOException {
            StringBuilder s = new StringBuilder("2;");  // the format: a cache of an older one is asked again
            Path real = python.toRealPath();
            s.append(real).append('@').append(Files.getLastModifiedTime(real).toMillis());
            if (lines != null) {
                for (String key : new String[] {"libpython", "standin", "standin_source", "jpype_jar"}) {
                    List<String> v = lines.get(key);
                    Path p = Paths.get(v == null ? "" : v.get(0));
                    s.append(';').append(p).append('@').append(Files.getLastModifiedTime(p).toMillis());
                }
            }
            return s.toString();
        }

        static Description of(Path python) {
            Path cache;
            try {
                byte[] key = MessageDigest.getInstance("SHA-256").digest(python.toString().getBytes(
                        StandardCharsets.UTF_8));
                cache = cacheFolder().resolve("describe-" + hex(key).substring(0, 16) + ".txt");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
            try {
                List<String> text = Files.readAllLines(cache);
                Map<String, List<String>> lines = parse(text.subList(1, text.size()));
                if (!text.isEmpty() && text.get(0).equals("stamp=" + stamp(python, lines))) {
                    return new Description(lines, cache);
                }
            } catch (IOException | RuntimeException stale) {
                // absent, unreadable or stale: ask the interpreter
            }
            List<String> text = ask(python);
            Map<String, List<String>> lines = parse(text);
            if (lines.containsKey("error")) {
                throw new NotAttachedException("cannot boot isthmus inside this JVM with " + python + ": "
                        + lines.get("error").get(0));
            }
            try {
                Files.createDirectories(cache.getParent());
                Path tmp = Files.createTempFile(cache.getParent(), ".describe", ".txt");
                List<String> out = new ArrayList<>();
                out.add("stamp=" + stamp(python, lines));
                out.addAll(text);
                Files.write(tmp, out);
                Files.move(tmp, cache, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException | RuntimeException e) {
                // no cache this time: the next boot asks again
            }
            return new Description(lines, cache);
        }

        private static Map<String, List<String>> parse(List<String> text) {
            Map<String, List<String>> lines = new LinkedHashMap<>();
            for (String line : text) {
                int eq = line.indexOf('=');
                if (eq > 0) {
                    lines.computeIfAbsent(line.substring(0, eq), k -> new ArrayList<>()).add(line.substring(eq + 1));
                }
            }
            return lines;
        }

        private static List<String> ask(Path python) {
            ProcessBuilder pb = new ProcessBuilder(python.toString(), "-m", "isthmus.java.hosted", "describe");
            pb.redirectError(ProcessBuilder.Redirect.INHERIT);
            pb.environment().remove("PYTHONHOME");
            try {
                Process p = pb.start();
                p.getOutputStream().close();
                byte[] out = p.getInputStream().readAllBytes();
                if (!p.waitFor(300, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new NotAttachedException(python + " -m isthmus.java.hosted describe did not finish");
                }
                List<String> text = List.of(new String(out, StandardCharsets.UTF_8).split("\n"));
                int rc = p.exitValue();
                if (rc != 0 && text.stream().noneMatch(l -> l.startsWith("error="))) {
                    throw new NotAttachedException(python + " -m isthmus.java.hosted describe failed (exit " + rc
                            + "; see its output above): is isthmus installed in that environment?");
                }
                return text;
            } catch (IOException e) {
                throw new NotAttachedException("cannot run " + python + ": " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new NotAttachedException("interrupted while asking " + python + " about itself");
            }
        }
    }

    /**
     * The few Foreign Function & Memory calls the boot makes, through reflection (see the class
     * comment): libc's {@code dlopen}/{@code dlsym}/{@code setenv}, and CPython's entry points.
     */
    static final class Ffm {
        static final int VOID = 0;
        static final int INT = 1;
        static final int PTR = 2;
        private static final boolean MAC = System.getProperty("os.name", "").startsWith("Mac");
        private static final int RTLD_NOW = 2;
        private static final int RTLD_GLOBAL = MAC ? 8 : 0x100;

        private final Object linker;
        private final Object arena;
        private final Object lookup;
        private final Class<?> segment;
        private final Class<?> layout;
        private final Object address;
        private final Object javaInt;
        private final Method downcall;
        private final Method find;
        private final Method of;
        private final Method ofVoid;
        private final Method allocateFrom;
        private final Method ofAddress;
        private final Method addressOf;
        private final Method reinterpret;
        private final Method getString;
        private final Object noOptions;
        private final Object rtldDefault;

        private Ffm() throws ReflectiveOperationException {
            Class<?> linkerClass = Class.forName("java.lang.foreign.Linker");
            Class<?> optionClass = Class.forName("java.lang.foreign.Linker$Option");
            Class<?> lookupClass = Class.forName("java.lang.foreign.SymbolLookup");
            Class<?> arenaClass = Class.forName("java.lang.foreign.Arena");
            Class<?> descriptor = Class.forName("java.lang.foreign.FunctionDescriptor");
            Class<?> valueLayout = Class.forName("java.lang.foreign.ValueLayout");
            segment = Class.forName("java.lang.foreign.MemorySegment");
            layout = Class.forName("java.lang.foreign.MemoryLayout");
            linker = linkerClass.getMethod("nativeLinker").invoke(null);
            lookup = linkerClass.getMethod("defaultLookup").invoke(linker);
            arena = arenaClass.getMethod("global").invoke(null);
            address = valueLayout.getField("ADDRESS").get(null);
            javaInt = valueLayout.getField("JAVA_INT").get(null);
            noOptions = Array.newInstance(optionClass, 0);
            downcall = linkerClass.getMethod("downcallHandle", segment, descriptor, noOptions.getClass());
            find = lookupClass.getMethod("find", String.class);
            Object layouts = Array.newInstance(layout, 0);
            of = descriptor.getMethod("of", layout, layouts.getClass());
            ofVoid = descriptor.getMethod("ofVoid", layouts.getClass());
            allocateFrom = Class.forName("java.lang.foreign.SegmentAllocator").getMethod("allocateFrom",
                    String.class);
            ofAddress = segment.getMethod("ofAddress", long.class);
            addressOf = segment.getMethod("address");
            reinterpret = segment.getMethod("reinterpret", long.class);
            getString = segment.getMethod("getString", long.class);
            rtldDefault = ofAddress.invoke(null, MAC ? -2L : 0L);
        }

        static Ffm load() {
            try {
                return new Ffm();
            } catch (ReflectiveOperationException | RuntimeException e) {
                throw new NotAttachedException("the Foreign Function & Memory API of this JDK " + Runtime.version()
                        + " is not usable (" + e + "); run the application with `isthmus java`");
            }
        }

        private Object layoutOf(int kind) {
            return kind == INT ? javaInt : address;
        }

        /** A downcall to the function at {@code fn}: result kind, then argument kinds. */
        private MethodHandle handle(Object fn, int result, int... args) throws ReflectiveOperationException {
            Object layouts = Array.newInstance(layout, args.length);
            for (int i = 0; i < args.length; i++) {
                Array.set(layouts, i, layoutOf(args[i]));
            }
            Object fd = result == VOID ? ofVoid.invoke(null, layouts) : of.invoke(null, layoutOf(result), layouts);
            return (MethodHandle) downcall.invoke(linker, fn, fd, noOptions);
        }

        private Object libc(String name) throws ReflectiveOperationException {
            Optional<?> found = (Optional<?>) find.invoke(lookup, name);
            return found.orElseThrow(() -> new IllegalStateException("libc has no " + name));
        }

        private static int kind(Object arg) {
            return arg instanceof Integer ? INT : PTR;
        }

        private Object invoke(Object fn, int result, Object... args) {
            int[] kinds = new int[args.length];
            for (int i = 0; i < args.length; i++) {
                kinds[i] = kind(args[i]);
            }
            try {
                return handle(fn, result, kinds).invokeWithArguments(args);
            } catch (InvocationTargetException e) {
                throw new IllegalStateException(e.getCause());
            } catch (Throwable e) {
                if (e instanceof RuntimeException) {
                    throw (RuntimeException) e;
                }
                if (e instanceof Error) {
                    throw (Error) e;
                }
                throw new IllegalStateException(e);
            }
        }

        private Object libcCall(String name, int result, Object... args) {
            try {
                return invoke(libc(name), result, args);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }

        Object cString(String s) {
            try {
                return allocateFrom.invoke(arena, s);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }

        String string(Object seg) {
            try {
                if ((Long) addressOf.invoke(seg) == 0) {
                    return "";
                }
                return (String) getString.invoke(reinterpret.invoke(seg, Long.MAX_VALUE), 0L);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }

        private Object symbol(Object handle, String name) {
            Object fn = libcCall("dlsym", PTR, handle, cString(name));
            try {
                return (Long) addressOf.invoke(fn) == 0 ? null : fn;
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }

        /** Whether CPython is already initialised in this process (a JVM that Python started). */
        boolean pythonRunning() {
            Object fn = symbol(rtldDefault, "Py_IsInitialized");
            return fn != null && (Integer) invoke(fn, INT) != 0;
        }

        /** dlopen(path, RTLD_NOW | RTLD_GLOBAL), or a NotAttachedException with dlerror's reason. */
        Object dlopen(String path) {
            Object handle = libcCall("dlopen", PTR, cString(path), RTLD_NOW | RTLD_GLOBAL);
            try {
                if ((Long) addressOf.invoke(handle) == 0) {
                    throw new NotAttachedException("cannot load " + path + ": "
                            + string(libcCall("dlerror", PTR)));
                }
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
            return handle;
        }

        /** Calls {@code name} of the library {@code handle}. */
        Object call(String name, Object handle, int result, Object... args) {
            Object fn = symbol(handle, name);
            if (fn == null) {
                throw new NotAttachedException("the loaded libpython has no " + name);
            }
            return invoke(fn, result, args);
        }

        /** The stand-in's {@code isthmus_open_java_lang} (JNI: java.lang opened to unnamed modules); false if not. */
        boolean openJavaLang(String standin) {
            try {
                Object handle = dlopen(standin);
                return (Integer) call("isthmus_open_java_lang", handle, INT) == 0;
            } catch (NotAttachedException e) {
                return false;  // the hooks stay unordered, as with a plain JVM before
            }
        }

        void setenv(String name, String value) {
            libcCall("setenv", INT, cString(name), cString(value), 1);
        }

        void unsetenv(String name) {
            libcCall("unsetenv", INT, cString(name));
        }
    }
}
