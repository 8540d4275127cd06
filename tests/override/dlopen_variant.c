// The dlopen variant of the override, loaded with dlopen into a running program:
// its ELF must not ask for static TLS (which dlopen can run out of), and its heap
// must work from threads that existed before the load and from new ones.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

enum { thread_count = 4, blocks_per_thread = 2000 };

static void* (*loaded_malloc)(size_t);
static void (*loaded_free)(void*);
static size_t (*loaded_usable_size)(const void*);
static pthread_barrier_t loaded;

// Whether the loaded object's dynamic section sets DF_STATIC_TLS.
static int wants_static_tls(void* handle) {
  struct link_map* map = NULL;
  CHECK(dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL, "dlinfo: %s", dlerror());
  for (const ElfW(Dyn)* entry = map->l_ld; entry->d_tag != DT_NULL; ++entry)
    if (entry->d_tag == DT_FLAGS && (entry->d_un.d_val & DF_STATIC_TLS) != 0) return 1;
  return 0;
}

// Fill blocks of varied sizes, check them, free them; `early` threads wait for the load.
static void* use_heap(void* early) {
  if (early != NULL) pthread_barrier_wait(&loaded);
  unsigned char* blocks[blocks_per_thread];
  for (int i = 0; i < blocks_per_thread; ++i) {
    size_t size = 16 + (size_t)(i * 37) % 5000;
    blocks[i] = loaded_malloc(size);
    CHECK(blocks[i] != NULL && loaded_usable_size(blocks[i]) >= size, "strata_malloc(%zu)", size);
    memset(blocks[i], i & 0xff, size);
  }
  for (int i = 0; i < blocks_per_thread; ++i) {
    size_t size = 16 + (size_t)(i * 37) % 5000;
    for (size_t at = 0; at < size; at += 97)
      CHECK(blocks[i][at] == (unsigned char)(i & 0xff), "block %d byte %zu", i, at);
    loaded_free(blocks[i]);
  }
  return NULL;
}

int main(int argc, char** argv) {
  CHECK(argc == 2, "usage: dlopen_variant LIBRARY");
  pthread_t threads[2 * thread_count];
  pthread_barrier_init(&loaded, NULL, thread_count + 1);
  for (int i = 0; i < thread_count; ++i)
    CHECK(pthread_create(&threads[i], NULL, use_heap, &loaded) == 0, "pthread_create");

  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  CHECK(handle != NULL, "dlopen: %s", dlerror());
  CHECK(!wants_static_tls(handle), "%s is marked STATIC_TLS", argv[1]);
  loaded_malloc = (void* (*)(size_t))dlsym(handle, "strata_malloc");
  loaded_free = (void (*)(void*))dlsym(handle, "strata_free");
  loaded_usable_size = (size_t(*)(const void*))dlsym(handle, "strata_usable_size");
  CHECK(loaded_malloc != NULL && loaded_free != NULL && loaded_usable_size != NULL, "dlsym");
  pthread_barrier_wait(&loaded);

  for (int i = thread_count; i < 2 * thread_count; ++i)
    CHECK(pthread_create(&threads[i], NULL, use_heap, NULL) == 0, "pthread_create");
  use_heap(NULL);
  for (int i = 0; i < 2 * thread_count; ++i) pthread_join(threads[i], NULL);
  return 0;
}
