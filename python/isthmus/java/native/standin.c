/* The JVM library JPype is given when the JVM was started by its own host (`java -jar`, a build
 * tool's test JVM, Spark) and the isthmus runtime boots inside it (io.isthmus.Isthmus.get() on
 * JDK 22+, see isthmus.java.hosted). JPype's startJVM dlopens a "libjvm" and calls its
 * JNI_CreateJavaVM; this one creates nothing: it returns the JVM that already runs this process,
 * with the calling (Python) thread attached to it as a daemon.
 *
 * No jni.h: a JRE has none. The invocation interface's layout is fixed by the JNI specification. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

typedef int jint;
struct invoke {
    void *reserved0, *reserved1, *reserved2;
    jint (*DestroyJavaVM)(void *vm);
    jint (*AttachCurrentThread)(void *vm, void **env, void *args);
    jint (*DetachCurrentThread)(void *vm);
    jint (*GetEnv)(void *vm, void **env, jint version);
    jint (*AttachCurrentThreadAsDaemon)(void *vm, void **env, void *args);
};
typedef const struct invoke *JavaVM;
typedef jint (*created_fn)(JavaVM **, jint, jint *);

#define JNI_ERR (-1)

jint JNI_GetCreatedJavaVMs(JavaVM **vms, jint size, jint *count);

/* The real JNI_GetCreatedJavaVMs: the running JVM's library is already loaded (the java launcher
 * loads it RTLD_GLOBAL), so it is found by its soname, else in the global scope. */
static created_fn real_created(void) {
    void *jvm = dlopen("libjvm.so", RTLD_LAZY | RTLD_NOLOAD);
    created_fn f = jvm ? (created_fn)dlsym(jvm, "JNI_GetCreatedJavaVMs") : NULL;
    if (f == NULL || f == JNI_GetCreatedJavaVMs) {
        f = (created_fn)dlsym(RTLD_DEFAULT, "JNI_GetCreatedJavaVMs");
    }
    return f == JNI_GetCreatedJavaVMs ? NULL : f;
}

jint JNI_GetCreatedJavaVMs(JavaVM **vms, jint size, jint *count) {
    created_fn f = real_created();
    if (f == NULL) {
        if (count) *count = 0;
        return JNI_ERR;
    }
    return f(vms, size, count);
}

jint JNI_CreateJavaVM(JavaVM **pvm, void **penv, void *args) {
    JavaVM *vm = NULL;
    jint n = 0;
    (void)args; /* the running JVM's options are its host's */
    *pvm = NULL;
    if (JNI_GetCreatedJavaVMs(&vm, 1, &n) != 0 || n < 1 || vm == NULL) {
        return JNI_ERR;
    }
    if ((*vm)->AttachCurrentThreadAsDaemon(vm, penv, NULL) != 0) {
        return JNI_ERR;
    }
    *pvm = vm;
    return 0;
}

/* JNIEnv's function table: the slots used below, by their index in the JNI specification. */
enum { JNI_DEFINE_CLASS = 5, JNI_FIND_CLASS = 6, JNI_EXCEPTION_CLEAR = 17, JNI_DELETE_LOCAL_REF = 23,
       JNI_GET_METHOD_ID = 33, JNI_CALL_OBJECT_METHOD_A = 36, JNI_CALL_VOID_METHOD_A = 63,
       JNI_GET_STATIC_METHOD_ID = 113, JNI_CALL_STATIC_OBJECT_METHOD_A = 116, JNI_NEW_STRING_UTF = 167,
       JNI_EXCEPTION_CHECK = 228 };
typedef void *const *JNIEnv; /* a pointer to the function table */
#define JNI_FN(env, slot, type) ((type)(*(env))[slot])

/* Defines classes (their class-file bytes) in the system class loader, for JPype: its native part
 * finds org.jpype.JPypeClassLoader with JNI's FindClass, which on a thread attached from native
 * code searches the system class loader, and its own class loader delegates to that one. An
 * application whose class path does not hold org.jpype.jar (a Spring Boot jar: it is nested in
 * BOOT-INF/lib, seen by Boot's own loader only) gets the installed JPype's classes this way.
 * A class whose superclass or interfaces are not defined yet fails and is tried again in the next
 * round. Returns how many classes were left undefined (0: all), or -1 without a JVM. */
int isthmus_define_system_classes(int count, const char *const *names, const unsigned char *const *bytes,
                                  const jint *lengths) {
    JavaVM *vm = NULL;
    jint n = 0;
    JNIEnv *env = NULL;
    if (JNI_GetCreatedJavaVMs(&vm, 1, &n) != 0 || n < 1 || vm == NULL) {
        return -1;
    }
    if ((*vm)->GetEnv(vm, (void **)&env, 0x00090000) != 0 &&
        (*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&env, NULL) != 0) {
        return -1;
    }
    typedef void *(*find_fn)(JNIEnv *, const char *);
    typedef void *(*static_id_fn)(JNIEnv *, void *, const char *, const char *);
    typedef void *(*call_static_fn)(JNIEnv *, void *, void *, const void *);
    typedef void *(*define_fn)(JNIEnv *, const char *, void *, const unsigned char *, jint);
    typedef void (*clear_fn)(JNIEnv *);
    typedef unsigned char (*check_fn)(JNIEnv *);
    typedef void (*delete_fn)(JNIEnv *, void *);
    void *cls = JNI_FN(env, JNI_FIND_CLASS, find_fn)(env, "java/lang/ClassLoader");
    if (cls == NULL) {
        JNI_FN(env, JNI_EXCEPTION_CLEAR, clear_fn)(env);
        return count;
    }
    void *get = JNI_FN(env, JNI_GET_STATIC_METHOD_ID, static_id_fn)(env, cls, "getSystemClassLoader",
                                                                     "()Ljava/lang/ClassLoader;");
    void *loader = get ? JNI_FN(env, JNI_CALL_STATIC_OBJECT_METHOD_A, call_static_fn)(env, cls, get, NULL) : NULL;
    if (loader == NULL) {
        JNI_FN(env, JNI_EXCEPTION_CLEAR, clear_fn)(env);
        return count;
    }
    unsigned char done[4096] = {0};
    int left = count > 4096 ? 4096 : count, progress = 1;
    while (left > 0 && progress) {
        progress = 0;
        for (int i = 0; i < count && i < 4096; i++) {
            if (done[i]) continue;
            void *c = JNI_FN(env, JNI_DEFINE_CLASS, define_fn)(env, names[i], loader, bytes[i], lengths[i]);
            if (c == NULL || JNI_FN(env, JNI_EXCEPTION_CHECK, check_fn)(env)) {
                JNI_FN(env, JNI_EXCEPTION_CLEAR, clear_fn)(env);
                continue;
            }
            JNI_FN(env, JNI_DELETE_LOCAL_REF, delete_fn)(env, c);
            done[i] = 1;
            left--;
            progress = 1;
        }
    }
    JNI_FN(env, JNI_DELETE_LOCAL_REF, delete_fn)(env, loader);
    JNI_FN(env, JNI_DELETE_LOCAL_REF, delete_fn)(env, cls);
    return left + (count > 4096 ? count - 4096 : 0);
}

/* Opens the package java.lang of java.base to every unnamed module, as the java launcher's
 * --add-opens java.base/java.lang=ALL-UNNAMED does (which `isthmus java` passes): the runtime's
 * shutdown step (io.isthmus.ShutdownOrder) then runs after the application's shutdown hooks, so
 * they can use the runtime and no call enters the bridge after it closed. JNI calls the JDK's own
 * Module.implAddOpensToAllUnnamed, as the launcher's option does. Called by io.isthmus.InProcess
 * (a downcall from the Java thread that boots the runtime). Returns 0 when done, -1 if not. */
int isthmus_open_java_lang(void) {
    JavaVM *vm = NULL;
    jint n = 0;
    JNIEnv *env = NULL;
    if (JNI_GetCreatedJavaVMs(&vm, 1, &n) != 0 || n < 1 || vm == NULL ||
        (*vm)->GetEnv(vm, (void **)&env, 0x00090000) != 0) {
        return -1;
    }
    typedef void *(*find_fn)(JNIEnv *, const char *);
    typedef void *(*id_fn)(JNIEnv *, void *, const char *, const char *);
    typedef void *(*call_object_fn)(JNIEnv *, void *, void *, const void *);
    typedef void (*call_void_fn)(JNIEnv *, void *, void *, const void *);
    typedef void *(*string_fn)(JNIEnv *, const char *);
    typedef void (*clear_fn)(JNIEnv *);
    typedef unsigned char (*check_fn)(JNIEnv *);
    void *object = JNI_FN(env, JNI_FIND_CLASS, find_fn)(env, "java/lang/Object");
    void *klass = JNI_FN(env, JNI_FIND_CLASS, find_fn)(env, "java/lang/Class");
    void *module = JNI_FN(env, JNI_FIND_CLASS, find_fn)(env, "java/lang/Module");
    void *get = klass ? JNI_FN(env, JNI_GET_METHOD_ID, id_fn)(env, klass, "getModule", "()Ljava/lang/Module;") : NULL;
    void *open = module ? JNI_FN(env, JNI_GET_METHOD_ID, id_fn)(env, module, "implAddOpensToAllUnnamed",
                                                               "(Ljava/lang/String;)V") : NULL;
    void *base = object && get ? JNI_FN(env, JNI_CALL_OBJECT_METHOD_A, call_object_fn)(env, object, get, NULL) : NULL;
    void *name = JNI_FN(env, JNI_NEW_STRING_UTF, string_fn)(env, "java.lang");
    if (base == NULL || open == NULL || name == NULL) {
        JNI_FN(env, JNI_EXCEPTION_CLEAR, clear_fn)(env);
        return -1;
    }
    JNI_FN(env, JNI_CALL_VOID_METHOD_A, call_void_fn)(env, base, open, &name);
    if (JNI_FN(env, JNI_EXCEPTION_CHECK, check_fn)(env)) {
        JNI_FN(env, JNI_EXCEPTION_CLEAR, clear_fn)(env);
        return -1;
    }
    return 0;
}

jint JNI_GetDefaultJavaVMInitArgs(void *args) {
    (void)args;
    return JNI_ERR;
}
