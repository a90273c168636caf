package app;

import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/** A Spring Boot application (repackaged jar: its own classes and io.isthmus in nested jars) running {@link Check}. */
@SpringBootApplication
public class BootApp {
    public static void main(String[] args) {
        SpringApplication.run(BootApp.class, args);
    }

    @Bean
    CommandLineRunner check() {
        return args -> {
            for (String line : Check.all()) {
                System.out.println(line);
            }
        };
    }
}
