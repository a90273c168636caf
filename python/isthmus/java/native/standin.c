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

jint JNI_GetDefaultJavaVMInitArgs(void *args) {
    (void)args;
    return JNI_ERR;
}
