# Builds llama-server and only what it links: llama.cpp's sdist builds every tool (the CLI, quantize, perplexity,
# the benches, TTS, the multimodal CLIs, the unified app), which geomon never runs. Passed to llama.cpp's CMake
# with -DCMAKE_PROJECT_INCLUDE (deploy/build-llama-server.sh): after the configure step, every target but
# llama-server leaves the default build; the libraries it links are still built as its dependencies.
if(NOT COMMAND geomon_only_llama_server)
  function(geomon_targets_under dir out)
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    foreach(sub IN LISTS subdirs)
      geomon_targets_under("${sub}" below)
      list(APPEND targets ${below})
    endforeach()
    set(${out} ${targets} PARENT_SCOPE)
  endfunction()

  function(geomon_only_llama_server)
    geomon_targets_under("${CMAKE_SOURCE_DIR}" targets)
    if(NOT "llama-server" IN_LIST targets)
      message(FATAL_ERROR "geomon: llama.cpp defines no llama-server target (deploy/llama-server-only.cmake)")
    endif()
    foreach(target IN LISTS targets)
      if(NOT target STREQUAL "llama-server")
        set_property(TARGET ${target} PROPERTY EXCLUDE_FROM_ALL TRUE)
      endif()
    endforeach()
  endfunction()

  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL geomon_only_llama_server)
endif()
